"""``mmengine.hooks.ParamSchedulerHook``: steps ``runner.param_schedulers``, keeping no state.

MMEngine's hook has no ``__init__`` and keeps nothing between calls, so a
subclass that defines its own ``__init__`` without calling ``super()``
(mmyolo's ``YOLOv5ParamSchedulerHook``) still inherits working stages. This
one is the same: every stage reads the Runner's schedulers when it runs.

Example::

    >>> from hookline.compat.mmengine.hooks import ParamSchedulerHook
    >>> class Custom(ParamSchedulerHook):
    ...     def __init__(self, factor):       # no super().__init__(), as in mmyolo
    ...         self.factor = factor
    >>> Custom(0.1).triggered_stages()
    ['before_train', 'after_train_iter', 'after_train_epoch', 'after_val_epoch', 'after_train']
"""

from __future__ import annotations

from typing import Any

from torch.optim.lr_scheduler import ReduceLROnPlateau

from hookline.core import ConfigError
from hookline.engine.data import loader_length
from hookline.engine.hook import DATA_BATCH, Hook
from hookline.engine.schedulers_per_optimizer import scheduler_pairs


def _plateau(scheduler: Any) -> bool:
    return isinstance(scheduler, ReduceLROnPlateau) or type(scheduler).__name__ in (
        "ReduceOnPlateauLR", "ReduceOnPlateauMomentum", "ReduceOnPlateauParamScheduler")


class ParamSchedulerHook(Hook):
    """Steps per-iteration schedulers after each optimizer step, per-epoch ones after
    each epoch (every ``len(train_dataloader)`` iterations in iteration-based runs), and
    plateau schedulers after each validation during training on their ``monitor``."""

    priority = "LOW"

    def after_train_iter(self, runner: Any, batch_idx: int, data_batch: DATA_BATCH = None,
                         outputs: dict[str, Any] | None = None) -> None:
        schedulers = scheduler_pairs(getattr(runner, "param_schedulers", None))
        if not schedulers:
            return
        wrapper = runner.optim_wrapper
        if wrapper is None or wrapper.should_step_schedulers():
            for scheduler, by_epoch in schedulers:
                if not by_epoch and not _plateau(scheduler):
                    scheduler.step()
        if runner.by_epoch:
            return
        length = loader_length(runner.train_dataloader)  # None: by_epoch schedulers are refused
        if length and (runner.iter + 1) % length == 0:
            self._step_epoch(schedulers)

    def after_train_epoch(self, runner: Any) -> None:
        schedulers = scheduler_pairs(getattr(runner, "param_schedulers", None))
        if schedulers and runner.by_epoch:
            self._step_epoch(schedulers)

    @staticmethod
    def _step_epoch(schedulers: list[tuple[Any, bool]]) -> None:
        for scheduler, by_epoch in schedulers:
            if by_epoch and not _plateau(scheduler):
                scheduler.step()

    def before_train(self, runner: Any) -> None:
        self._training = True

    def after_train(self, runner: Any) -> None:
        self._training = False

    def after_val_epoch(self, runner: Any, metrics: dict[str, float] | None = None) -> None:
        schedulers = scheduler_pairs(getattr(runner, "param_schedulers", None))
        if not getattr(self, "_training", False):
            return  # a standalone validation: plateau schedulers step during training only
        for scheduler, _ in schedulers:
            if not _plateau(scheduler):
                continue
            monitor = getattr(scheduler, "monitor", "loss")
            if not metrics or monitor not in metrics:
                raise ConfigError(f"the plateau scheduler monitors {monitor!r} but validation "
                                  f"gave {sorted(metrics or {})}; set 'monitor' in its config")
            scheduler.step(metrics[monitor])


__all__ = ["ParamSchedulerHook"]
