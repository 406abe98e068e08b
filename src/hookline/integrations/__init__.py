"""hookline.integrations: bridges to Keras and PyTorch Lightning, both ways.

- Keras callbacks and Lightning callbacks in a hookline ``Runner``: given in
  ``hooks=[...]`` (or built from a config), each is wrapped automatically by
  its adapter (:mod:`.keras`, :mod:`.lightning_runner`);
- a ``LightningModule`` trained by a ``Runner``: its ``self.log`` /
  ``self.log_dict`` and ``self.trainer`` work in the run (:mod:`.lightning_module`,
  set up by the ``lightning_module`` adapter of ``MODEL_ADAPTERS``);
- hookline hooks and inspect tools inside a ``lightning.Trainer``:
  :mod:`.lightning` (``HookCallback``, ``GradientMonitorCallback`` ...).

Importing this package imports neither Keras nor Lightning: it registers the
two adapters in ``HOOK_ADAPTERS`` (the engine imports it by name the first
time a Runner gets an object that is not a Hook) and the frameworks' built-in
callbacks in ``HOOKS`` under their import paths, so a config may say
``{"type": "keras.callbacks.EarlyStopping", "patience": 2}``; the framework
is imported when such a config is built. See docs/bridges.md.

Example::

    >>> from hookline.engine.registries import HOOK_ADAPTERS, HOOKS
    >>> sorted(HOOK_ADAPTERS)
    ['keras', 'lightning']
    >>> "keras.callbacks.EarlyStopping" in HOOKS, "lightning.pytorch.callbacks.Timer" in HOOKS
    (True, True)
"""

from __future__ import annotations

import importlib
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from hookline.core.dependencies import missing_dependency
from hookline.core.errors import ConfigError
from hookline.core.registry import check_call
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOK_ADAPTERS, HOOKS, MODEL_ADAPTERS

from ._detect import is_lightning_callback, is_lightning_module, looks_like_keras

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["KERAS_CALLBACKS", "LIGHTNING_CALLBACKS"]


class _KerasAdapter:
    """Keras callbacks (and objects with Keras's callback methods) -> ``KerasCallbackHook``."""

    name = "keras"

    def matches(self, obj: object) -> bool:
        return looks_like_keras(obj)

    def wrap(self, obj: Any, runner: Runner) -> Hook:
        from .keras import wrap_keras_callback  # noqa: PLC0415  (loaded when first needed)
        return wrap_keras_callback(obj, runner)


class _LightningAdapter:
    """``lightning.pytorch.Callback`` instances -> ``LightningCallbackHook``; a
    ``LightningModule`` given as a hook is refused (:func:`misplaced_module`)."""

    name = "lightning"

    def matches(self, obj: object) -> bool:
        return is_lightning_callback(obj) or is_lightning_module(obj)

    def wrap(self, obj: Any, runner: Runner) -> Hook:
        if is_lightning_module(obj):
            raise ConfigError(misplaced_module(obj))
        from .lightning_runner import LightningCallbackHook  # noqa: PLC0415  (loaded when needed)
        return LightningCallbackHook(obj, runner)


def misplaced_module(module: Any) -> str:
    """What a Runner says of a ``LightningModule`` given as a hook: it is the model (its own
    hook methods, ``on_train_epoch_end`` ..., run from there)."""
    name = type(module).__name__
    return (f"a LightningModule ({name}) is not a hook: pass it as the Runner's model, "
            f"Runner(model={name}(...), train_dataloader=..., ...), not in hooks=[...]; its own "
            "hook methods (on_train_epoch_end ...) then run where Trainer.fit runs them "
            "(docs/bridges.md)")


class _LightningModuleAdapter:
    """A ``LightningModule`` given to a Runner: its ``self.log`` and ``self.trainer`` work in
    the run (:mod:`.lightning_module`)."""

    name = "lightning_module"

    def matches(self, model: object) -> bool:
        return is_lightning_module(model)

    def attach(self, runner: Runner) -> AbstractContextManager[Any]:
        from .lightning_module import attach_module  # noqa: PLC0415  (loaded when needed)
        return attach_module(runner)


MODEL_ADAPTERS.register(_LightningModuleAdapter(), name="lightning_module")
# a Lightning callback also has on_train_batch_end, a Keras name: looks_like_keras leaves it out
HOOK_ADAPTERS.register(_LightningAdapter(), name="lightning")
HOOK_ADAPTERS.register(_KerasAdapter(), name="keras")

#: the built-in callbacks a config may name by import path (all but the refused ones run)
KERAS_CALLBACKS = ("BackupAndRestore", "CSVLogger", "EarlyStopping", "History", "LambdaCallback",
                   "LearningRateScheduler", "ModelCheckpoint", "ProgbarLogger", "ReduceLROnPlateau",
                   "RemoteMonitor", "SwapEMAWeights", "TensorBoard", "TerminateOnNaN")
LIGHTNING_CALLBACKS = ("EarlyStopping", "GradientAccumulationScheduler", "LambdaCallback",
                       "LearningRateMonitor", "ModelCheckpoint", "Timer", "DeviceStatsMonitor",
                       "ModelSummary", "StochasticWeightAveraging", "ThroughputMonitor",
                       "RichProgressBar", "TQDMProgressBar", "OnExceptionCheckpoint",
                       "SpikeDetection", "BatchSizeFinder", "LearningRateFinder",
                       "BackboneFinetuning", "ModelPruning", "WeightAveraging")


def _lazy(module: str, name: str) -> Any:
    """A builder of ``module.name`` that imports the framework when a config is built."""
    def build(**kwargs: Any) -> Any:
        if module.startswith("keras"):
            from . import keras as _  # noqa: F401, PLC0415  (KERAS_BACKEND=torch before keras loads)
        try:
            imported = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            error = missing_dependency(exc, f"hook type '{module}.{name}'")
            if error is None:
                raise
            raise ConfigError(str(error)) from exc
        cls = getattr(imported, name)
        check_call(cls, kwargs, f"hook type '{module}.{name}'")
        return cls(**kwargs)
    build.__name__ = name
    build.__qualname__ = name
    build.__module__ = module  # it builds that class (and is no hookline hook of the catalog)
    build.__doc__ = f"Builds {module}.{name}(**kwargs), run through its hookline adapter."
    return build


for _name in KERAS_CALLBACKS:
    HOOKS.register(_lazy("keras.callbacks", _name), name=f"keras.callbacks.{_name}")
for _name in LIGHTNING_CALLBACKS:
    HOOKS.register(_lazy("lightning.pytorch.callbacks", _name),
                   name=f"lightning.pytorch.callbacks.{_name}")
