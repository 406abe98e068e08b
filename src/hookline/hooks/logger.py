"""LoggerHook: text lines (console + ``log.txt``) and ``metrics.jsonl``, with an ETA.

Example::

    >>> from hookline.hooks import LoggerHook
    >>> LoggerHook(interval=50).interval
    50

A training line looks like::

    Epoch(train) [2][ 40/45]  lr: 1.0000e-02  eta: 0:00:03  time: 0.0051  data_time: 0.0004  loss: 0.2519

and each line of ``metrics.jsonl`` is one JSON object, e.g.
``{"mode": "val", "epoch": 2, "iter": 90, "accuracy": 0.97, "loss": 0.11}``.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

LOGGER_HOOK_NAMES = ("LoggerHook", "TextLoggerHook")


@HOOKS.register()
class LoggerHook(Hook):
    """Logs smoothed training scalars every ``interval`` iterations and the
    validation/test metrics after each evaluation.

    Values are averaged over the last ``interval`` iterations; reading them is
    the only host-device sync, once per ``interval``. Only the main process writes.

    Args:
        interval: iterations between training log lines.
        by_epoch: show the position as ``[epoch][batch/len]`` (True) or ``[iter/max]``.
        ignore_last: skip the partial interval at the end of an epoch.
        out_file: name of the JSON-lines file in ``work_dir``.
    """

    priority = "BELOW_NORMAL"

    def __init__(self, interval: int = 10, by_epoch: bool = True, ignore_last: bool = False,
                 out_file: str = "metrics.jsonl") -> None:
        self.interval = interval
        self.by_epoch = by_epoch
        self.ignore_last = ignore_last
        self.out_file = out_file
        self._stream: Any = None

    # -- files --------------------------------------------------------------------
    def before_run(self, runner) -> None:
        runner.message_hub.window = max(runner.message_hub.window, self.interval)
        if runner.is_main_process and self._stream is None:
            runner.work_dir.mkdir(parents=True, exist_ok=True)
            self._stream = open(runner.work_dir / self.out_file, "a", encoding="utf-8")  # noqa: SIM115

    def after_run(self, runner) -> None:
        self._close()

    def on_exception(self, runner, exception: BaseException) -> None:
        self._close()

    def _close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _write(self, record: dict) -> None:
        if self._stream is not None:
            self._stream.write(json.dumps(record) + "\n")
            self._stream.flush()

    # -- training -----------------------------------------------------------------
    def after_train_iter(self, runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        by_epoch = self.by_epoch and runner.max_epochs is not None
        length = len(runner.train_dataloader)
        at_interval = self.every_n_inner_iters(batch_idx, self.interval) if by_epoch \
            else self.every_n_train_iters(runner, self.interval)
        at_end = by_epoch and not self.ignore_last and batch_idx + 1 == length
        if not (at_interval or at_end):
            return
        hub = runner.message_hub
        done = batch_idx % self.interval + 1 if at_end and not at_interval else self.interval
        values = {key.split("/", 1)[1]: hub.mean(key, done) for key in hub.keys("train/")}
        record: dict[str, Any] = {"mode": "train", "epoch": runner.epoch + 1,
                                  "iter": runner.iter + 1}
        if runner.optimizer is not None:
            record["lr"] = runner.optimizer.param_groups[0]["lr"]
        record.update(values)
        if by_epoch:
            width = len(str(length))
            where = f"Epoch(train) [{runner.epoch + 1}][{batch_idx + 1:>{width}}/{length}]"
        else:
            where = f"Iter(train) [{runner.iter + 1:>{len(str(runner.max_iters))}}/{runner.max_iters}]"
        parts = [where]
        if "lr" in record:
            parts.append(f"lr: {record['lr']:.4e}")
        eta = self._eta(runner, values.get("time"))
        if eta is not None:
            parts.append(f"eta: {eta}")
        parts += [f"{k}: {v:.4f}" for k, v in values.items()]
        runner.logger.info("  ".join(parts))
        self._write(record)

    @staticmethod
    def _eta(runner, seconds_per_iter: float | None) -> str | None:
        if seconds_per_iter is None:
            return None
        total = runner.max_iters if runner.max_iters is not None else \
            runner.max_epochs * len(runner.train_dataloader)
        remaining = max(total - runner.iter - 1, 0) * seconds_per_iter
        return str(datetime.timedelta(seconds=int(remaining)))

    # -- evaluation -----------------------------------------------------------------
    def after_val_epoch(self, runner, metrics: dict[str, float] | None = None) -> None:
        self._log_metrics(runner, "val", metrics or {})

    def after_test_epoch(self, runner, metrics: dict[str, float] | None = None) -> None:
        self._log_metrics(runner, "test", metrics or {})

    def _log_metrics(self, runner, mode: str, metrics: dict[str, float]) -> None:
        where = f"Epoch({mode}) [{runner.epoch}]" if runner.max_epochs is not None \
            else f"Iter({mode}) [{runner.iter}]"
        runner.logger.info("  ".join([where] + [f"{k}: {v:.4f}" for k, v in metrics.items()]))
        self._write({"mode": mode, "epoch": runner.epoch, "iter": runner.iter, **metrics})


@HOOKS.register()
class TextLoggerHook(LoggerHook):
    """mmcv's name for :class:`LoggerHook` (text + JSON lines)."""
