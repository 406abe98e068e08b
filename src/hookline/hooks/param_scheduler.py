"""ParamSchedulerHook: steps ``torch.optim.lr_scheduler`` schedulers per epoch or iteration.

Example::

    >>> from hookline.hooks import ParamSchedulerHook
    >>> ParamSchedulerHook().triggered_stages()
    ['before_train', 'after_train_iter', 'after_train_epoch', 'after_val_epoch']
"""

from __future__ import annotations

from typing import Any

from torch.optim.lr_scheduler import ReduceLROnPlateau

from hookline.core import ConfigError
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS


@HOOKS.register()
class ParamSchedulerHook(Hook):
    """Steps ``runner.param_schedulers``: ``by_epoch`` ones after each training epoch
    (or, in an iteration-based run, every ``len(train_dataloader)`` iterations), the
    others after each iteration, and ReduceLROnPlateau after validation on its
    ``monitor`` metric (default ``"loss"``)."""

    priority = "LOW"

    def before_train(self, runner) -> None:
        self._per_iter = [s for s, by_epoch in runner.param_schedulers
                          if not by_epoch and not isinstance(s, ReduceLROnPlateau)]
        self._per_epoch = [s for s, by_epoch in runner.param_schedulers
                           if by_epoch and not isinstance(s, ReduceLROnPlateau)]
        self._plateau = [s for s, _ in runner.param_schedulers if isinstance(s, ReduceLROnPlateau)]
        self._epoch_length = (len(runner.train_dataloader) if runner.max_iters is not None
                              else None)

    def after_train_iter(self, runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        for scheduler in self._per_iter:
            scheduler.step()
        if self._epoch_length and (runner.iter + 1) % self._epoch_length == 0:
            for scheduler in self._per_epoch:
                scheduler.step()

    def after_train_epoch(self, runner) -> None:
        if self._epoch_length is None:
            for scheduler in self._per_epoch:
                scheduler.step()

    def after_val_epoch(self, runner, metrics: dict[str, float] | None = None) -> None:
        for scheduler in getattr(self, "_plateau", ()):
            monitor = getattr(scheduler, "monitor", "loss")
            if not metrics or monitor not in metrics:
                raise ConfigError(
                    f"ReduceLROnPlateau monitors {monitor!r} but validation gave "
                    f"{sorted(metrics or {})}; set 'monitor' in its config")
            scheduler.step(metrics[monitor])
