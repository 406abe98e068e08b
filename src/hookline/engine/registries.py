"""The registries config files name things through.

``HOOKS`` holds every built-in hook (``hookline.hooks`` is imported the
first time a hook name is looked up: the engine finds hooks by name, never
by import), ``LOOPS`` the train/val/test loop classes, ``OPTIM_WRAPPERS``
the optimizer wrappers, ``MODELS`` and ``DATASETS`` what users (and the
demo) register, ``OPTIMIZERS`` and ``PARAM_SCHEDULERS`` every
``torch.optim`` and ``torch.optim.lr_scheduler`` class by its name, and
``LOSSES`` every ``torch.nn`` loss class (``CrossEntropyLoss`` ...), and
``HOOK_ADAPTERS`` the adapters that turn a Keras or Lightning callback into a
hook and ``MODEL_ADAPTERS`` those that set up a model of another framework (a
``LightningModule``) for a run (``hookline.integrations`` registers both,
imported on first use).

Example::

    >>> from hookline.engine.registries import OPTIMIZERS, PARAM_SCHEDULERS
    >>> "AdamW" in OPTIMIZERS, "CosineAnnealingLR" in PARAM_SCHEDULERS
    (True, True)
"""

from __future__ import annotations

import inspect

import torch

from hookline.core import Registry

# scope "hookline": the roots of their trees (``hookline.compat`` hangs MMEngine's and
# mmcv's registries below them, so "hookline.EMAHook" always names the built-in)
# hookline.integrations adds the Keras and Lightning callbacks by import path
# ("keras.callbacks.EarlyStopping"), run through their adapters
HOOKS = Registry("hook", locations=("hookline.hooks", "hookline.integrations"), scope="hookline")
LOOPS = Registry("loop", scope="hookline")
OPTIM_WRAPPERS = Registry("optim_wrapper", scope="hookline")
MODELS = Registry("model", scope="hookline")
DATASETS = Registry("dataset", scope="hookline")
OPTIMIZERS = Registry("optimizer", scope="hookline")
PARAM_SCHEDULERS = Registry("param_scheduler", scope="hookline")
LOSSES = Registry("loss", scope="hookline")
#: a dataloader config's ``collate_fn`` by name (MMEngine's ``FUNCTIONS``); see collate.py
COLLATE_FUNCTIONS = Registry("function", locations=("hookline.engine.collate",),
                             scope="hookline")
#: validation and test metrics by name: ``callable(preds, targets)`` called once per pass with
#: the whole pass's predictions and targets, returning a number or a dict of numbers
#: (``metrics={"err": "error_rate"}`` after ``@METRICS.register()``); see evaluator.py
METRICS = Registry("metric", scope="hookline")
#: adapters that wrap other frameworks' callbacks (Keras, Lightning) in hooks when they are
#: registered with a Runner; ``hookline.integrations`` registers them (see hook_adapters.py)
HOOK_ADAPTERS = Registry("hook_adapter", locations=("hookline.integrations",), scope="hookline")
#: adapters that set up a model of another framework for a run (a LightningModule's self.log
#: and self.trainer); ``hookline.integrations`` registers them (see model_adapters.py)
MODEL_ADAPTERS = Registry("model_adapter", locations=("hookline.integrations",), scope="hookline")

for _name, _obj in vars(torch.optim).items():
    if inspect.isclass(_obj) and issubclass(_obj, torch.optim.Optimizer) \
            and _obj is not torch.optim.Optimizer:
        OPTIMIZERS.register(_obj, name=_name)

for _name, _obj in vars(torch.optim.lr_scheduler).items():
    if inspect.isclass(_obj) and _name[0].isupper() and _name not in (
        "LRScheduler", "_LRScheduler", "Optimizer", "Tensor", "Counter", "partial", "ref",
    ) and (issubclass(_obj, torch.optim.lr_scheduler.LRScheduler)
           or _name == "ReduceLROnPlateau"):
        PARAM_SCHEDULERS.register(_obj, name=_name)

# the loss classes are what torch.nn.modules.loss exports (its private bases are not)
for _name in torch.nn.modules.loss.__all__:
    _obj = getattr(torch.nn.modules.loss, _name)
    if inspect.isclass(_obj) and issubclass(_obj, torch.nn.Module):
        LOSSES.register(_obj, name=_name)

DATASETS.register(torch.utils.data.TensorDataset, name="TensorDataset")
