"""CheckpointHook: periodic, last, best-by-metric and keep-N checkpoints.

Example::

    >>> from hookline.hooks import CheckpointHook
    >>> hook = CheckpointHook(interval=2, max_keep_ckpts=3, save_best="accuracy")
    >>> hook.rule
    'greater'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hookline.core import ConfigError
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

from ._rules import infer_rule, is_better


@HOOKS.register()
class CheckpointHook(Hook):
    """Saves resumable checkpoints (written atomically, with a ``latest`` pointer).

    Args:
        interval: save every ``interval`` epochs (``by_epoch``) or iterations.
        by_epoch: count epochs (files ``epoch_N.pth``) or iterations (``iter_N.pth``).
        save_optimizer: include optimizer, schedulers and scaler (needed to resume).
        out_dir: folder for the files (default: the run's ``work_dir``).
        max_keep_ckpts: keep only the newest N periodic checkpoints (-1: all).
        save_last: always save at the end of training.
        save_best: a validation metric name, or ``"auto"`` for the first one;
            the best checkpoint (``best_<metric>_epoch_N.pth``) keeps the
            optimizer state, so it is resumable.
        rule: ``"greater"`` or ``"less"``; inferred from the name when None.
        filename_tmpl: e.g. ``"ckpt_{}.pth"``; ``{}`` is the epoch or iteration.
    """

    priority = "VERY_LOW"

    def __init__(self, interval: int = 1, by_epoch: bool = True, save_optimizer: bool = True,
                 out_dir: str | Path | None = None, max_keep_ckpts: int = -1,
                 save_last: bool = True, save_best: str | None = None, rule: str | None = None,
                 filename_tmpl: str | None = None) -> None:
        if not isinstance(interval, int) or interval < 1:
            raise ConfigError(f"CheckpointHook interval must be an int >= 1, got {interval!r}")
        if filename_tmpl is not None and "{}" not in filename_tmpl:
            raise ConfigError(f"filename_tmpl needs a '{{}}' placeholder, got {filename_tmpl!r}")
        self.interval = interval
        self.by_epoch = by_epoch
        self.save_optimizer = save_optimizer
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.max_keep_ckpts = max_keep_ckpts
        self.save_last = save_last
        self.save_best = save_best
        self.rule = None if save_best in (None, "auto") else infer_rule(save_best, rule)
        self._rule_arg = rule
        self.filename_tmpl = filename_tmpl or ("epoch_{}.pth" if by_epoch else "iter_{}.pth")
        self.kept: list[str] = []
        self.best_score: float | None = None
        self.best_ckpt: str | None = None
        self._last_saved_iter: int | None = None

    # -- state ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"kept": list(self.kept), "best_score": self.best_score,
                "best_ckpt": self.best_ckpt, "rule": self.rule}

    def load_state_dict(self, state: dict) -> None:
        self.kept = list(state.get("kept", []))
        self.best_score = state.get("best_score")
        self.best_ckpt = state.get("best_ckpt")
        self.rule = self.rule or state.get("rule")

    # -- when to save -------------------------------------------------------------------
    def _folder(self, runner) -> Path:
        return self.out_dir if self.out_dir is not None else runner.work_dir

    def after_train_epoch(self, runner) -> None:
        if not self.by_epoch or runner.max_epochs is None:
            return
        if self.every_n_epochs(runner, self.interval) or (
                self.save_last and self.is_last_train_epoch(runner)):
            self._save_periodic(runner, self.filename_tmpl.format(runner.epoch + 1),
                                runner.iter)

    def after_train_iter(self, runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        if self.by_epoch and runner.max_epochs is not None:
            return
        if self.every_n_train_iters(runner, self.interval) or (
                self.save_last and self.is_last_train_iter(runner)):
            self._save_periodic(runner, self.filename_tmpl.format(runner.iter + 1),
                                runner.iter + 1)

    def after_train(self, runner) -> None:
        """Training ended early (``stop_training``): keep its final state too."""
        if self.save_last and self._last_saved_iter != runner.iter and runner.iter > 0:
            self._save_periodic(runner, f"iter_{runner.iter}.pth", runner.iter)

    def _save_periodic(self, runner, name: str, iteration: int) -> None:
        if name not in self.kept:
            self.kept.append(name)
        stale = []
        if self.max_keep_ckpts > 0:
            while len(self.kept) > self.max_keep_ckpts:
                stale.append(self.kept.pop(0))
        runner.save_checkpoint(self._folder(runner) / name, save_optimizer=self.save_optimizer)
        self._last_saved_iter = iteration
        if runner.is_main_process:
            for old in stale:
                if old != self.best_ckpt:
                    (self._folder(runner) / old).unlink(missing_ok=True)

    # -- best ---------------------------------------------------------------------------
    def after_val_epoch(self, runner, metrics: dict[str, float] | None = None) -> None:
        if self.save_best is None or not metrics:
            return
        key = next(iter(metrics)) if self.save_best == "auto" else self.save_best
        if key not in metrics:
            raise ConfigError(f"save_best={self.save_best!r} is not among the validation "
                              f"metrics {sorted(metrics)}")
        if self.rule is None:
            self.rule = infer_rule(key, self._rule_arg)
        value = float(metrics[key])
        if not is_better(value, self.best_score, self.rule):
            return
        previous = self.best_ckpt
        self.best_score = value
        step = f"epoch_{runner.epoch}" if runner.max_epochs is not None else f"iter_{runner.iter}"
        self.best_ckpt = f"best_{key.replace('/', '_')}_{step}.pth"
        runner.save_checkpoint(self._folder(runner) / self.best_ckpt,
                               save_optimizer=self.save_optimizer)
        runner.logger.info("new best %s %.4f: saved %s", key, value, self.best_ckpt)
        if previous and previous != self.best_ckpt and previous not in self.kept \
                and runner.is_main_process:
            (self._folder(runner) / previous).unlink(missing_ok=True)
