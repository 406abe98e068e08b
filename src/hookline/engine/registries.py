"""The registries config files name things through.

``HOOKS`` holds every built-in hook (``hookline.hooks`` is imported the
first time a hook name is looked up: the engine finds hooks by name, never
by import), ``LOOPS`` the train/val/test loop classes, ``OPTIM_WRAPPERS``
the optimizer wrappers, ``MODELS`` and ``DATASETS`` what users (and the
demo) register, ``OPTIMIZERS`` and ``PARAM_SCHEDULERS`` every
``torch.optim`` and ``torch.optim.lr_scheduler`` class by its name, and
``LOSSES`` every ``torch.nn`` loss class (``CrossEntropyLoss`` ...).

Example::

    >>> from hookline.engine.registries import OPTIMIZERS, PARAM_SCHEDULERS
    >>> "AdamW" in OPTIMIZERS, "CosineAnnealingLR" in PARAM_SCHEDULERS
    (True, True)
"""

from __future__ import annotations

import inspect

import torch

from hookline.core import Registry

HOOKS = Registry("hook", locations=("hookline.hooks",))
LOOPS = Registry("loop")
OPTIM_WRAPPERS = Registry("optim_wrapper")
MODELS = Registry("model")
DATASETS = Registry("dataset")
OPTIMIZERS = Registry("optimizer")
PARAM_SCHEDULERS = Registry("param_scheduler")
LOSSES = Registry("loss")

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
