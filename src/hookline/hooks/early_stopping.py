"""EarlyStoppingHook: stop training when a validation metric stops improving.

Example::

    >>> from hookline.hooks import EarlyStoppingHook
    >>> hook = EarlyStoppingHook("accuracy", patience=3)
    >>> hook.rule, hook.triggered_stages()
    ('greater', ['before_train', 'after_val_epoch', 'after_train', 'on_exception'])
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from hookline.core import ConfigError
from hookline.engine.checks import boolean, finite_float, positive_int
from hookline.engine.hook import Hook
from hookline.engine.metric_names import monitored_number, strip_val_prefix
from hookline.engine.registries import HOOKS

from ._rules import infer_rule, is_better, warn_if_misspelled

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


@HOOKS.register()
class EarlyStoppingHook(Hook):
    """After each validation during training, sets ``runner.stop_training`` when
    ``monitor`` has not improved for ``patience`` validations.

    Args:
        monitor: a validation metric name, as in the metrics dict (``"accuracy"``,
            ``"loss"``; Lightning's ``"val_"`` / ``"val/"`` prefixes are accepted: ``"val_loss"``
            monitors ``"loss"``, as ReduceLROnPlateau's ``monitor``).
        rule: ``"greater"`` or ``"less"``; inferred from the name when None
            (names with acc, f1, auc, ... are greater; loss, error, mse, ... less).
        min_delta: an improvement must beat the best score by more than this.
        patience: validations without improvement before stopping.
        check_finite: stop at once when the metric is NaN or infinite.
        stopping_threshold: stop at once when the metric reaches this value
            (``>=`` for greater, ``<=`` for less).

    The best score and the count of validations without improvement are the
    hook's state, so they survive a resume. Stand-alone ``runner.val()``
    calls are not counted. Stopping is logged with the reason, kept in
    :attr:`stop_reason`.

    Example::

        runner = Runner(model, ..., max_epochs=100,
                        hooks=[EarlyStoppingHook("loss", patience=5, min_delta=1e-3)])
    """

    priority = "LOWEST"

    def __init__(self, monitor: str, rule: str | None = None, min_delta: float = 0.0,
                 patience: int = 5, check_finite: bool = True,
                 stopping_threshold: float | None = None) -> None:
        if not isinstance(monitor, str) or not monitor:
            raise ConfigError(f"EarlyStoppingHook monitor must be a metric name, got {monitor!r}")
        positive_int(patience, "patience", owner="EarlyStoppingHook")
        finite_float(min_delta, "min_delta", owner="EarlyStoppingHook", low=0)
        finite_float(stopping_threshold, "stopping_threshold", owner="EarlyStoppingHook",
                     allow_none=True)
        boolean(check_finite, "check_finite", owner="EarlyStoppingHook")
        self.monitor = monitor
        self.rule = infer_rule(monitor, rule)
        self.min_delta = float(min_delta)
        self.patience = patience
        self.check_finite = check_finite
        self.stopping_threshold = stopping_threshold
        self.best_score: float | None = None
        self.wait_count = 0
        self.stop_reason: str | None = None
        self._training = False

    # -- state ----------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"best_score": self.best_score, "wait_count": self.wait_count}

    def load_state_dict(self, state: dict) -> None:
        self.best_score = state.get("best_score")
        self.wait_count = int(state.get("wait_count", 0))

    # -- when to check --------------------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        if runner.val_dataloader is None:
            raise ConfigError(f"EarlyStoppingHook(monitor={self.monitor!r}) needs a val_dataloader: "
                              "it decides after each validation")
        warn_if_misspelled(runner, self.monitor, "EarlyStoppingHook monitor")
        self._training = True

    def after_train(self, runner: Runner) -> None:
        self._training = False

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        self._training = False

    def _value(self, metrics: dict[str, float]) -> float:
        key = strip_val_prefix(self.monitor, metrics)  # Lightning's val_loss, val/loss
        if key not in metrics:
            raise ConfigError(f"EarlyStoppingHook monitor={self.monitor!r} is not among the "
                              f"validation metrics; available: {sorted(metrics)}")
        return monitored_number(metrics[key], key, "EarlyStoppingHook monitor")

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        if not self._training or runner.stop_training:
            return
        value = self._value(metrics or {})
        reason = None
        if self.check_finite and not math.isfinite(value):
            reason = f"{self.monitor} = {value} is not finite"
        elif self.stopping_threshold is not None and (
                value >= self.stopping_threshold if self.rule == "greater"
                else value <= self.stopping_threshold):
            reason = f"{self.monitor} = {value:.6g} reached stopping_threshold " \
                     f"{self.stopping_threshold}"
        elif is_better(value, self.best_score, self.rule, self.min_delta):
            self.best_score = value
            self.wait_count = 0
        else:
            self.wait_count += 1
            if self.wait_count >= self.patience:
                best = "none" if self.best_score is None else f"{self.best_score:.6g}"
                reason = (f"{self.monitor} did not improve on its best {best} by more than "
                          f"{self.min_delta} in {self.wait_count} validations")
        if reason is not None:
            runner.stop_training = True
            self.stop_reason = reason
            runner.logger.info("early stopping at epoch %d, iteration %d: %s",
                               runner.epoch, runner.iter, reason)

    def __repr__(self) -> str:
        return (f"EarlyStoppingHook(monitor={self.monitor!r}, rule={self.rule!r}, "
                f"min_delta={self.min_delta}, patience={self.patience})")

