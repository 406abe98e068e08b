"""TensorboardLoggerHook: training scalars, learning rates, evaluation metrics and
(optionally) parameter and gradient histograms, as TensorBoard event files.

Example::

    >>> from hookline.hooks import TensorboardLoggerHook
    >>> hook = TensorboardLoggerHook(interval=5, histograms=True, histogram_interval=50)
    >>> hook.histogram_interval
    50

Tags: ``train/<name>`` (``train/loss``, ``train/time``, ``train/data_time``, any
other scalar of the step outputs, ``train/lr``) at the global iteration;
``val/<metric>`` and ``test/<metric>`` at the training iteration they were
computed after; ``params/<name>`` and ``grads/<name>`` histograms.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError
from hookline.engine.checks import boolean, positive_int
from hookline.engine.environment import check_writable_folder
from hookline.engine.history_buffer import ScalarWindow
from hookline.engine.hook import Hook
from hookline.engine.logs import flush_logger, run_with_lines
from hookline.engine.registries import HOOKS

from .log_steps import current_lrs, epoch_length, log_window, scalar_windows

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


@HOOKS.register()
class TensorboardLoggerHook(Hook):
    """Writes a run's scalars to TensorBoard with ``torch.utils.tensorboard.SummaryWriter``.

    Only the main process writes. Training scalars are the same smoothed values
    :class:`~hookline.hooks.LoggerHook` logs (averaged over the iterations since
    the previous log step, read once per ``interval``: one host sync), written
    at step ``iteration`` (1-based, counted over the whole run), averaged on
    the Runner logger's writer thread, as LoggerHook's are. Evaluation
    metrics are written after each validation or test run. On resume the
    writer purges events at or after the resumed iteration, so curves do not
    double back. The writer is flushed after each evaluation and closed at the
    end of the run or when it fails.

    Args:
        interval: iterations between training scalar writes.
        log_dir: folder for the event files (default ``work_dir/tf_logs``).
        by_epoch: count ``interval`` within each epoch, also writing at each
            epoch's end (like LoggerHook), or over the whole run.
        histograms: also write histograms of every trainable parameter
            (``params/<name>``, after that iteration's optimizer step) and of
            its gradient (``grads/<name>``: ``param.grad`` after that
            iteration's backward, so with accumulation the sum so far;
            unscaled when AMP loss scaling is on; under DDP this process's
            local gradient).
        histogram_interval: iterations between histograms (default: the
            number of batches of the training data, i.e. about once per epoch;
            for a train loader without a length, the length of a pass once
            one has ended: none before).
        log_metric_by_epoch: write validation metrics at step ``epoch`` (the
            epochs done) in an epoch-based run, as MMEngine's default does;
            by default at the training iteration they followed, so train and
            val curves share one x axis.

    Example::

        >>> from hookline import HOOKS
        >>> HOOKS.build({"type": "TensorboardLoggerHook", "log_dir": "runs/exp1"}).log_dir
        PosixPath('runs/exp1')
    """

    priority = "BELOW_NORMAL"

    def __init__(self, interval: int = 10, log_dir: str | Path | None = None,
                 by_epoch: bool = True, histograms: bool = False,
                 histogram_interval: int | None = None, log_metric_by_epoch: bool = False
                 ) -> None:
        self.interval: int = positive_int(interval, "interval", owner="TensorboardLoggerHook")
        positive_int(histogram_interval, "histogram_interval", owner="TensorboardLoggerHook",
                     allow_none=True)
        if log_dir is not None and not isinstance(log_dir, (str, Path)):
            raise ConfigError(f"TensorboardLoggerHook log_dir must be a path or None, got {log_dir!r}")
        self.log_dir = check_writable_folder(log_dir, "TensorboardLoggerHook log_dir") \
            if log_dir is not None else None
        self.by_epoch = boolean(by_epoch, "by_epoch", owner="TensorboardLoggerHook")
        self.histograms = boolean(histograms, "histograms", owner="TensorboardLoggerHook")
        self.histogram_interval = histogram_interval
        self.log_metric_by_epoch = boolean(log_metric_by_epoch, "log_metric_by_epoch",
                                           owner="TensorboardLoggerHook")
        self.writer: Any = None
        self._grads: dict[str, torch.Tensor] = {}
        self._scale = 1.0
        self._grad_handles: list = []

    def __repr__(self) -> str:
        return f"TensorboardLoggerHook(interval={self.interval}, histograms={self.histograms})"

    # -- writer -----------------------------------------------------------------------
    def summary_writer(self, runner: Runner) -> Any:
        """The run's ``SummaryWriter`` (made on first use, on the main process only; None on
        other ranks)."""
        if self.writer is None and runner.is_main_process:
            from torch.utils.tensorboard import SummaryWriter  # noqa: PLC0415  (lazy: tensorboard only when a writer is made)

            log_dir = self.log_dir if self.log_dir is not None else runner.work_dir / "tf_logs"
            log_dir.mkdir(parents=True, exist_ok=True)
            purge = runner.iter + 1 if runner.iter > 0 else None
            self.writer = SummaryWriter(log_dir=str(log_dir), purge_step=purge)
        return self.writer

    def before_run(self, runner: Runner) -> None:
        runner.message_hub.window = max(runner.message_hub.window, self.interval)

    def before_train(self, runner: Runner) -> None:
        self.summary_writer(runner)  # after a resume: purges the steps that will run again

    def after_run(self, runner: Runner) -> None:
        self._close(runner)

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        self._close(runner)

    def _close(self, runner: Runner) -> None:
        self._remove_grad_hooks()
        if self.writer is not None:
            flush_logger(runner.logger)  # the training scalars queued on the logger's writer
            self.writer.close()
            self.writer = None

    # -- training ---------------------------------------------------------------------
    def _histogram_due(self, runner: Runner) -> bool:
        if not self.histograms or not runner.is_main_process:
            return False
        every = self.histogram_interval or epoch_length(runner)  # None: not known yet
        return every is not None and (runner.iter + 1) % every == 0

    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        if not self._histogram_due(runner):
            return
        self._grads = {}
        scaler = runner.grad_scaler  # the scale this iteration's backward uses
        self._scale = float(scaler.get_scale()) if scaler is not None and scaler.is_enabled() \
            else 1.0
        for name, param in runner.model.named_parameters():
            if param.requires_grad:
                self._grad_handles.append(param.register_post_accumulate_grad_hook(
                    self._grad_recorder(name)))

    def _grad_recorder(self, name: str) -> Callable[[torch.Tensor], None]:
        def record(param: torch.Tensor) -> None:
            if param.grad is not None:  # set: the hook runs after accumulating into it
                self._grads[name] = param.grad.detach().clone()
        return record

    def _remove_grad_hooks(self) -> None:
        for handle in self._grad_handles:
            handle.remove()
        self._grad_handles = []

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        step = runner.iter + 1
        if self._grad_handles:
            self._write_histograms(runner, step)
        count = log_window(runner, batch_idx, self.interval, self.by_epoch)
        if count is None:
            return
        writer = self.summary_writer(runner)
        if writer is None:
            return
        # averaging reads the values (a host-device sync): the logger's writer thread does it
        run_with_lines(runner.logger, _add_train_scalars, writer,
                       scalar_windows(runner, "train", count), current_lrs(runner), step)

    def _write_histograms(self, runner: Runner, step: int) -> None:
        self._remove_grad_hooks()
        writer = self.summary_writer(runner)
        scale = self._scale
        for name, param in runner.model.named_parameters():
            if param.requires_grad:
                writer.add_histogram(f"params/{name}", param.detach().float().cpu(), step)
            grad = self._grads.get(name)
            if grad is not None:
                writer.add_histogram(f"grads/{name}", grad.float().cpu() / scale, step)
        self._grads = {}

    # -- evaluation ---------------------------------------------------------------------
    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._write_metrics(runner, "val", metrics or {})

    def after_test_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._write_metrics(runner, "test", metrics or {})

    def _write_metrics(self, runner: Runner, mode: str, metrics: dict[str, float]) -> None:
        writer = self.summary_writer(runner)
        if writer is None:
            return
        step = runner.epoch if self.log_metric_by_epoch and runner.by_epoch else runner.iter
        for name, value in metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                writer.add_scalar(f"{mode}/{name}", float(value), step)
        flush_logger(runner.logger)  # training scalars still queued are written before the flush
        writer.flush()


def _add_train_scalars(writer: Any, windows: dict[str, ScalarWindow], lrs: dict[str, float],
                       step: int) -> None:
    """Average each window and write it, then the learning rates, as ``train/<name>``."""
    for name, window in windows.items():
        writer.add_scalar(f"train/{name}", window.mean(), step)
    for name, value in lrs.items():
        writer.add_scalar(f"train/{name}", value, step)
