"""hookline inside Lightning: ``HookCallback`` runs hookline hooks in a ``lightning.Trainer``.

``Trainer(callbacks=[HookCallback(EMAHook(), MyHook())])`` calls each hook at
its stage, with a :class:`~hookline.integrations.lightning_facade.LightningRunner`
as ``runner``; the inspect tools come as ready callbacks
(:class:`GradientMonitorCallback`, :class:`ActivationStatsCallback`,
:class:`FeatureExtractorCallback`, in :mod:`.lightning_inspect`). The stages,
from Lightning's hooks:

=====================================  ==========================================
hookline stage                         Lightning hook
=====================================  ==========================================
before_run / after_run                 ``setup`` / ``teardown`` (fit, validate, test)
before_train / after_train             ``on_train_start`` / ``on_train_end``
before_train_epoch                     ``on_train_epoch_start``
before_train_iter / after_train_iter   ``on_train_batch_start`` / ``on_train_batch_end``
after_train_epoch                      when the epoch's last batch is done: before its
                                       validation (MMEngine's order), else at
                                       ``on_train_epoch_end``
before_val ... after_val               ``on_validation_start`` ... ``on_validation_end``
                                       (not during the sanity check); ``after_val_epoch``
                                       gets ``trainer.callback_metrics`` as floats
before_test ... after_test             ``on_test_*``
before_save_checkpoint                 ``on_save_checkpoint`` (the hooks' states go into
                                       the Lightning checkpoint, and back on resume)
after_load_checkpoint                  ``on_load_checkpoint``
on_exception                           ``on_exception``
=====================================  ==========================================

Importing this module imports Lightning (``pip install hookline[lightning]``).

Example::

    >>> from hookline import Hook
    >>> class CountBatches(Hook):
    ...     def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
    ...         pass
    >>> HookCallback(CountBatches()).state_key
    'HookCallback[CountBatches]'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from hookline.core.dependencies import raise_missing

try:
    import lightning.pytorch as pl
except ModuleNotFoundError as exc:  # one error saying what to install
    raise_missing(exc, "hookline.integrations.lightning")

from hookline.core import ConfigError, HookHandle
from hookline.engine.hook import Hook
from hookline.engine.hook_table import HookTable
from hookline.engine.registries import HOOKS

from ._detect import is_lightning_callback, is_lightning_module, looks_like_keras
from .lightning_facade import LightningRunner

__all__ = ["ActivationStatsCallback", "FeatureExtractorCallback",  # noqa: F822  (__getattr__)
           "GradientMonitorCallback", "HookCallback"]


_TAKES = "HookCallback takes hookline Hooks (instances, or {'type': ...} config dicts)"
_LIGHTNING_CALLBACK = ("a Lightning callback goes straight into the Trainer, next to the "
                       "HookCallback: Trainer(callbacks=[HookCallback(...), callback])")
_KERAS_CALLBACK = ("Keras callbacks cannot run inside a Lightning Trainer (they need Keras's fit "
                   "loop and its logs): run them in a hookline Runner, Runner(..., "
                   "hooks=[callback]) (docs/bridges.md), or use Lightning's own callback")


def not_a_hook(obj: Any) -> str:
    """What ``HookCallback`` says of an object it cannot run, and where that object goes."""
    if isinstance(obj, type):
        name = obj.__name__
        if issubclass(obj, Hook):
            return f"{_TAKES}; a class was given ({name}): pass an instance, {name}()"
        return f"{_TAKES}, got the class {obj.__module__}.{name}"
    name = type(obj).__name__
    if is_lightning_callback(obj):
        return f"{_TAKES}, got the Lightning callback {name}: {_LIGHTNING_CALLBACK}"
    if is_lightning_module(obj):
        return (f"{_TAKES}, got the LightningModule {name}: the Trainer trains it, "
                "trainer.fit(module)")
    if looks_like_keras(obj):
        return f"{_TAKES}, got the Keras callback {name}: {_KERAS_CALLBACK}"
    return (f"{_TAKES}, got {obj!r}; {_LIGHTNING_CALLBACK}; {_KERAS_CALLBACK}")


def _outputs(outputs: Any) -> dict[str, Any] | None:
    """Lightning's ``outputs`` (a dict, a loss tensor, or None) as a Runner's step outputs."""
    if isinstance(outputs, torch.Tensor):
        return {"loss": outputs}
    return dict(outputs) if isinstance(outputs, Mapping) else None


class HookCallback(pl.Callback):
    """Runs hookline ``hooks`` (in priority order) at the matching Lightning hooks.

    Args:
        hooks: hookline :class:`~hookline.engine.hook.Hook` instances (``add`` takes more).
    """

    def __init__(self, *hooks: Hook | Mapping[str, Any]) -> None:
        super().__init__()
        self.table = HookTable()
        self.runner = LightningRunner(self.table)
        self._handles = [self.add(hook) for hook in hooks]
        self._epoch_open = False

    def add(self, hook: Hook | Mapping[str, Any], priority: Any = None) -> HookHandle:
        """Run ``hook`` (a hookline Hook, or a ``{"type": ...}`` config built from ``HOOKS``)
        too; returns its handle (``remove()`` takes it out). A Keras or Lightning callback is
        refused with a :class:`~hookline.core.ConfigError` saying where it goes."""
        if isinstance(hook, Mapping):
            cfg = dict(hook)
            cfg_priority = cfg.pop("priority", None)
            priority = priority if priority is not None else cfg_priority
            hook = HOOKS.build(cfg)
        if not isinstance(hook, Hook):
            raise ConfigError(not_a_hook(hook))
        return self.table.add(hook, priority)

    @property
    def hooks(self) -> list[Hook]:
        return self.table.hooks

    @property
    def state_key(self) -> str:
        return f"HookCallback[{','.join(type(h).__name__ for h in self.table.hooks)}]"

    def _call(self, trainer: Any, pl_module: Any, stage: str, **kwargs: Any) -> None:
        if self.table.stages[stage]:
            self.runner.bind(trainer, pl_module)
            self.table.call(self.runner, stage, **kwargs)  # type: ignore[arg-type]  # the facade

    # -- run ------------------------------------------------------------------------------------
    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._call(trainer, pl_module, "before_run")

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._call(trainer, pl_module, "after_run")

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.runner.bind(trainer, pl_module)
        self.table.call_on_exception(self.runner, exception, self.runner.logger)  # type: ignore[arg-type]

    # -- training ---------------------------------------------------------------------------------
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.runner.ended_epoch = None
        self._call(trainer, pl_module, "before_train")

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self.runner.ended_epoch, self._epoch_open = None, True
        self._call(trainer, pl_module, "before_train_epoch")

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        self._call(trainer, pl_module, "before_train_iter", batch_idx=batch_idx, data_batch=batch)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        outputs = _outputs(outputs)
        self.runner.outputs = outputs
        if outputs:
            self.runner.message_hub.update_many("train", outputs)
        self._call(trainer, pl_module, "after_train_iter", batch_idx=batch_idx, data_batch=batch,
                   outputs=outputs)

    def _end_epoch(self, trainer: Any, pl_module: Any) -> None:
        if self._epoch_open:
            self._epoch_open = False
            self._call(trainer, pl_module, "after_train_epoch")
            self.runner.ended_epoch = int(trainer.current_epoch)  # a Runner counts it from here

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self._end_epoch(trainer, pl_module)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._end_epoch(trainer, pl_module)
        self._call(trainer, pl_module, "after_train")

    # -- validation and test ---------------------------------------------------------------------------
    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking:
            return
        loop = getattr(trainer, "fit_loop", None)
        progress = getattr(getattr(loop, "epoch_loop", None), "batch_progress", None)
        if self._epoch_open and getattr(progress, "is_last_batch", False):
            self._end_epoch(trainer, pl_module)  # the epoch's last batch is done: MMEngine's order
        self._call(trainer, pl_module, "before_val")

    def on_validation_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        if not trainer.sanity_checking:
            self._call(trainer, pl_module, "before_val_epoch")

    def on_validation_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int,
                                  dataloader_idx: int = 0) -> None:
        if not trainer.sanity_checking:
            self._call(trainer, pl_module, "before_val_iter", batch_idx=batch_idx, data_batch=batch)

    def on_validation_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                                batch_idx: int, dataloader_idx: int = 0) -> None:
        if not trainer.sanity_checking:
            self._call(trainer, pl_module, "after_val_iter", batch_idx=batch_idx,
                       data_batch=batch, outputs=outputs)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if not trainer.sanity_checking:
            self._evaluated(trainer, pl_module, "val")

    def _evaluated(self, trainer: Any, pl_module: Any, mode: str) -> None:
        metrics = self._metrics(trainer) if self.table.stages[f"after_{mode}_epoch"] or \
            self.table.stages[f"after_{mode}"] else {}
        loop = self.runner.val_loop if mode == "val" else self.runner.test_loop
        loop.last_metrics = metrics
        self.runner.message_hub.info[f"{mode}_metrics"] = metrics
        self._call(trainer, pl_module, f"after_{mode}_epoch", metrics=metrics)
        self._call(trainer, pl_module, f"after_{mode}")

    @staticmethod
    def _metrics(trainer: Any) -> dict[str, float]:
        """``trainer.callback_metrics`` as floats (one host copy per evaluation)."""
        return {key: float(value) for key, value in trainer.callback_metrics.items()
                if not isinstance(value, torch.Tensor) or value.numel() == 1}

    def on_test_start(self, trainer: Any, pl_module: Any) -> None:
        self._call(trainer, pl_module, "before_test")

    def on_test_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        self._call(trainer, pl_module, "before_test_epoch")

    def on_test_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int,
                            dataloader_idx: int = 0) -> None:
        self._call(trainer, pl_module, "before_test_iter", batch_idx=batch_idx, data_batch=batch)

    def on_test_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                          batch_idx: int, dataloader_idx: int = 0) -> None:
        self._call(trainer, pl_module, "after_test_iter", batch_idx=batch_idx, data_batch=batch,
                   outputs=outputs)

    def on_test_end(self, trainer: Any, pl_module: Any) -> None:
        self._evaluated(trainer, pl_module, "test")

    # -- checkpoints -----------------------------------------------------------------------------------
    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        self._call(trainer, pl_module, "before_save_checkpoint", checkpoint=checkpoint)

    def on_load_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        self._call(trainer, pl_module, "after_load_checkpoint", checkpoint=checkpoint)

    def state_dict(self) -> dict[str, Any]:
        return {hook.state_key: state for hook in self.table.hooks
                if (state := hook.state_dict())}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for hook in self.table.hooks:
            if hook.state_key in state_dict:
                hook.load_state_dict(state_dict[hook.state_key])


#: the inspect callbacks live in lightning_inspect (they subclass HookCallback, so that module
#: imports this one): looked up on first use, so either module may be imported first
_INSPECT_CALLBACKS = ("ActivationStatsCallback", "FeatureExtractorCallback",
                      "GradientMonitorCallback")


def __getattr__(name: str) -> Any:
    if name in _INSPECT_CALLBACKS:
        from . import lightning_inspect  # noqa: PLC0415  (see _INSPECT_CALLBACKS)

        return getattr(lightning_inspect, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
