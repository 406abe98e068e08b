"""LoggerHook: text lines (console + ``log.txt``) and ``metrics.jsonl``, with an ETA.

Example::

    >>> from hookline.hooks import LoggerHook
    >>> LoggerHook(interval=50).interval
    50

A training line looks like MMEngine's::

    Epoch(train) [2][40/45]  lr: 1.000e-02  eta: 0:00:03  time: 0.0051  data_time: 0.0004  loss: 0.2519

and each line of ``metrics.jsonl`` is one JSON object, e.g.
``{"mode": "val", "epoch": 2, "iter": 90, "loss": 0.11, "accuracy": 0.97}``
(plus ``"weights": "ema"`` when :class:`~hookline.hooks.EMAHook` evaluated with its average).

What every logging hook shares (:func:`log_window`, :func:`scalar_windows`,
:func:`collect_scalars` ...) is in :mod:`hookline.hooks.log_steps` (importable
from here too, where it used to live).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import math
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError
from hookline.engine.checks import boolean, positive_int
from hookline.engine.data import loader_length
from hookline.engine.history_buffer import ScalarWindow
from hookline.engine.hook import Hook
from hookline.engine.log_file import LogWriteError
from hookline.engine.logs import (
    flush_logger,
    log_at,
    log_queued,
    run_with_lines,
    writer_of,
)
from hookline.engine.registries import HOOKS

from .log_steps import LAST_COLUMNS as _LAST
from .log_steps import collect_scalars as collect_scalars  # re-exported: its old home
from .log_steps import (
    current_lrs,
    epoch_length,
    is_lr_key,
    log_window,
    scalar_windows,
    total_train_iters,
)
from .metrics_file import json_line, trim_records

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

#: where LoggerHook publishes its latest training record (ProgressBarHook shows it)
LAST_RECORD_KEY = "log_record"
#: message-hub info naming the weights the current evaluation runs with, set by a hook that
#: swaps them in (EMAHook: ``"ema"``); LoggerHook copies it into the record as ``"weights"``
EVAL_WEIGHTS_KEY = "eval_weights"


def _of(done: int, total: int | None) -> str:
    """``' 7/45'``, or ``'7'`` when the total is unknown."""
    return str(done) if total is None else f"{done:>{len(str(total))}}/{total}"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if value == 0 or 1e-4 <= abs(value) < 1e5 or not math.isfinite(value) \
            else f"{value:.4e}"
    return str(value)


def _duration(seconds: float) -> str:
    """``str(datetime.timedelta(seconds=int(seconds)))``, cheaper under a day: ``'0:01:05'``."""
    whole = int(seconds)
    if whole >= 86400:
        return str(datetime.timedelta(seconds=whole))
    minutes, secs = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


#: keys averaged over a log step's iterations (MMEngine's LogProcessor ``mean_pattern``); any
#: other key shows its latest value
MEAN_PATTERN = re.compile(r".*(loss|time|data_time|grad_norm).*")


def _smoothed(name: str, window: ScalarWindow) -> float:
    """The window's mean for a key matching :data:`MEAN_PATTERN`, else its latest value."""
    if MEAN_PATTERN.match(name):
        return window.mean()
    return ScalarWindow(window.values[-1:]).mean()


def _train_line(where: str, record: dict[str, Any], values: dict[str, float], memory: int | None,
                eta: float | None) -> str:
    """The text of a training log line (made on the logger's writer thread)."""
    parts = [where] + [f"{k}: {v:.4e}" for k, v in record.items() if is_lr_key(k)]
    if eta is not None:
        parts.append(f"eta: {_duration(eta)}")
    parts += [f"{k}: {values[k]:.4f}" for k in _LAST if k in values]
    if memory is not None:
        parts.append(f"memory: {memory}")
    parts += [f"{k}: {_fmt(v)}" for k, v in values.items() if k not in _LAST]
    return "  ".join(parts)


def _cut_torn_line(path: Path) -> None:
    """Remove what a failed append left of a record at the end of ``path`` (the bytes after
    its last newline), so that every line of the file is a whole record; best effort."""
    with contextlib.suppress(OSError), open(path, "rb+") as stream:
        size = stream.seek(0, 2)
        if size == 0:
            return
        start = max(size - 65536, 0)
        stream.seek(start)
        tail = stream.read()
        newline = tail.rfind(b"\n")
        if newline == len(tail) - 1:
            return  # it ends with a whole line
        if newline >= 0 or start == 0:
            stream.truncate(start + newline + 1)


@HOOKS.register()
class LoggerHook(Hook):
    """Logs smoothed training scalars every ``interval`` iterations and the
    validation/test metrics after each evaluation, to the console, ``log.txt``
    (through ``runner.logger``) and ``metrics.jsonl``.

    Training values whose name matches :data:`MEAN_PATTERN` (losses, times,
    ``grad_norm``: MMEngine's ``mean_pattern``) are averaged over the iterations
    since the previous log step, any other value is its latest; reading them
    is the only host-device sync, once per ``interval``.
    The ETA is the average wall time per iteration since training (re)started
    times the iterations left. Only the main process writes; on the others a
    log step does nothing (no averaging, so no host-device sync, and no
    ``log_record``).

    At a log step the training thread only takes the windows of values (the
    tensors, unread) and the position, and queues them: the logger's writer
    thread (:func:`hookline.engine.logs.run_with_lines`) averages them (so the
    host-device sync is not the training thread's), publishes the record as
    ``message_hub.info["log_record"]``, formats the line and writes both, in
    order. While a progress bar is open this all happens at once, on the
    training thread. The queue is drained at the end of
    each epoch, before a checkpoint is saved and when the run ends (normally,
    by an exception or a signal); a SIGKILL loses at most what was queued
    since (docs/logging.md).

    ``metrics.jsonl`` is appended to. When a run resumes, records the
    interrupted run wrote *after* the checkpoint (iterations that will run
    again) are dropped first, so the file reads as one run. NaN and infinite
    values are written as ``null``.

    Args:
        interval: iterations between training log lines.
        by_epoch: count ``interval`` within each epoch and show the position as
            ``Epoch(train) [epoch][batch/len]`` (epoch-based runs), or over the
            whole run as ``Iter(train) [iter/max_iters]``.
        ignore_last: skip the last, shorter group of an epoch (or of the run).
        out_file: name of the JSON-lines file in ``work_dir`` (None: no file).
        background: write lines and records on the logger's writer thread (True,
            the default) or on the training thread (False); see docs/logging.md.

    Example::

        >>> from hookline import HOOKS
        >>> LoggerHook(interval=20, by_epoch=False)
        LoggerHook(interval=20, by_epoch=False)
        >>> HOOKS.build({"type": "LoggerHook", "interval": 20}).interval
        20
    """

    priority = "BELOW_NORMAL"

    def __init__(self, interval: int = 10, by_epoch: bool = True, ignore_last: bool = False,
                 out_file: str | None = "metrics.jsonl", background: bool = True) -> None:
        self.interval: int = positive_int(interval, "interval", owner="LoggerHook")
        if out_file is not None and (not isinstance(out_file, str) or not out_file
                                     or Path(out_file).name != out_file):
            raise ConfigError(f"LoggerHook out_file must be a file name inside work_dir "
                              f"(no folders) or None, got {out_file!r}")
        self.by_epoch = boolean(by_epoch, "by_epoch", owner="LoggerHook")
        self.ignore_last = boolean(ignore_last, "ignore_last", owner="LoggerHook")
        self.out_file = out_file
        self.background = boolean(background, "background", owner="LoggerHook")
        self._stream: Any = None
        self._failed = False  # a write of out_file failed in this run: no more are tried
        self._start: tuple[float, int] | None = None
        self._path: tuple[Path, Path] | None = None  # (work_dir, its out_file)
        #: the newest ``train/grad_norm`` record at the last log line (what is not news)
        self._logged_norm: Any = None

    def __repr__(self) -> str:
        return f"LoggerHook(interval={self.interval}, by_epoch={self.by_epoch})"

    # -- files --------------------------------------------------------------------
    def before_run(self, runner: Runner) -> None:
        self._failed = False
        runner.message_hub.window = max(runner.message_hub.window, self.interval)
        writer = writer_of(runner.logger)
        if writer is not None:
            writer.background = self.background

    def before_train(self, runner: Runner) -> None:
        self._start = (time.perf_counter(), runner.iter)
        if runner.iter > 0 and runner.is_main_process and self.out_file is not None:
            dropped = trim_records(runner.work_dir / self.out_file, runner.iter)
            if dropped:
                runner.logger.info("%s: dropped %d record(s) written after iteration %d by "
                                   "the interrupted run", self.out_file, dropped, runner.iter)

    def after_train_epoch(self, runner: Runner) -> None:
        flush_logger(runner.logger)  # an epoch's lines and records are on disk at its end

    def before_save_checkpoint(self, runner: Runner, checkpoint: dict) -> None:
        flush_logger(runner.logger)  # every record up to the checkpoint is on disk before it

    def before_val_epoch(self, runner: Runner) -> None:
        flush_logger(runner.logger)  # nothing queued is written while a progress bar opens

    before_test_epoch = before_val_epoch

    def after_run(self, runner: Runner) -> None:
        self._close(runner)

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        try:
            self._close(runner)
        except LogWriteError as exc:  # the error that ends the run is raised; this is one line
            runner.logger.error("%s", exc)
            self._close(runner)  # the failure is raised once: this one stops the thread

    def _close(self, runner: Runner) -> None:
        """Drain the writer (a failed queued write is raised here), stop its thread, close
        the file."""
        writer = writer_of(runner.logger)
        try:
            if writer is not None:
                writer.close()  # a new run's first line starts it again
        finally:
            if self._stream is not None:
                self._stream.close()
                self._stream = None

    def _write(self, runner: Runner, record: dict) -> None:
        """Queue ``record`` for ``out_file`` on the logger's writer thread."""
        if not runner.is_main_process or self.out_file is None:
            return
        if self._path is None or self._path[0] is not runner.work_dir:
            self._path = (runner.work_dir, runner.work_dir / self.out_file)
        path = self._path[1]
        writer = writer_of(runner.logger)
        if writer is None:
            self._append(path, record)
        else:
            writer.submit(self._append, path, record)

    def _append(self, path: Path, record: dict) -> None:
        """Append ``record`` to ``path``. A write that fails (disk full, read-only folder) is
        one :class:`~hookline.engine.log_file.LogWriteError` naming the file, raised once: the
        file is closed and the run's later records are not written (the run fails with it)."""
        if self._failed:
            return
        try:
            if self._stream is None:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._stream = open(path, "a", encoding="utf-8")  # noqa: SIM115
            self._stream.write(json_line(record))
            self._stream.flush()
        except OSError as exc:
            self._failed = True
            stream, self._stream = self._stream, None
            if stream is not None:
                with contextlib.suppress(OSError):  # its buffer cannot be written: dropped
                    stream.close()
                _cut_torn_line(path)
            raise LogWriteError.from_os_error(path, exc) from exc

    # -- training -----------------------------------------------------------------
    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        count = log_window(runner, batch_idx, self.interval, self.by_epoch, self.ignore_last)
        if count is None or not runner.is_main_process:
            return  # other processes write nothing: they average nothing (no device sync)
        # the training thread takes the windows and the position; the writer thread reads
        # the values (averaging is the log step's one host-device sync), then logs and writes
        windows = scalar_windows(runner, "train", count)
        self._only_new_grad_norm(runner, windows, count)
        record: dict[str, Any] = {"mode": "train", "epoch": runner.epoch + 1,
                                  "iter": runner.iter + 1, **current_lrs(runner)}
        memory = self._memory_mb(runner)
        if memory is not None:
            record["memory"] = memory
        if self.by_epoch and runner.by_epoch:
            where = f"Epoch(train) [{runner.epoch + 1}][{_of(batch_idx + 1, epoch_length(runner))}]"
        else:
            where = f"Iter(train) [{_of(runner.iter + 1, total_train_iters(runner))}]"
        run_with_lines(runner.logger, self._finish_train_log, runner, record, windows, where,
                       memory, self._eta(runner), time.time())

    def _only_new_grad_norm(self, runner: Runner, windows: dict[str, ScalarWindow],
                            count: int) -> None:
        """Keep in ``windows`` only the ``grad_norm`` records of optimizer steps since the
        last log line: with gradient accumulation (or a step that skipped clipping), an
        iteration that did not step shows no grad_norm rather than the previous step's."""
        if "grad_norm" not in windows:
            return
        buffer = runner.message_hub.get_scalar("train/grad_norm")
        recent = buffer.recent(count)
        new = len(recent)
        for i in range(len(recent) - 1, -1, -1):  # the newest record the last line showed
            if recent[i] is self._logged_norm:
                new = len(recent) - 1 - i
                break
        if new:
            windows["grad_norm"] = buffer.window(new)
            self._logged_norm = recent[-1]
        else:
            del windows["grad_norm"]

    def _finish_train_log(self, runner: Runner, record: dict[str, Any],
                          windows: dict[str, ScalarWindow], where: str, memory: int | None,
                          eta: float | None, created: float) -> None:
        """Average the windows, publish the record (``message_hub.info["log_record"]``),
        log the line and append the record (on the logger's writer thread, in order)."""
        values = {name: _smoothed(name, window) for name, window in windows.items()}
        record.update(values)
        runner.message_hub.info[LAST_RECORD_KEY] = record
        snapshot = dict(record)  # what is written: another hook may change the published record
        logger = runner.logger
        if logger.isEnabledFor(logging.INFO):
            log_at(logger, logging.INFO, _train_line(where, snapshot, values, memory, eta),
                   created)
        self._write(runner, snapshot)

    def _eta(self, runner: Runner) -> float | None:
        """Seconds left: the mean time per iteration since training (re)started times the
        iterations left (None: unknown)."""
        if self._start is None:
            return None
        started, first_iter = self._start
        done = runner.iter + 1 - first_iter
        if done <= 0:
            return None
        total = total_train_iters(runner)
        if total is None:  # a run of unknown length: no ETA until a pass has ended
            return None
        remaining = max(total - runner.iter - 1, 0)
        return (time.perf_counter() - started) / done * remaining

    @staticmethod
    def _memory_mb(runner: Runner) -> int | None:
        """Peak CUDA memory since the previous log step, in MiB (host counters: no sync)."""
        device = getattr(runner, "device", None)
        if device is None or device.type != "cuda":
            return None
        peak = torch.cuda.max_memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        return int(peak // 2**20)

    # -- evaluation -----------------------------------------------------------------
    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._log_metrics(runner, "val", metrics or {})

    def after_test_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._log_metrics(runner, "test", metrics or {})

    def _log_metrics(self, runner: Runner, mode: str, metrics: dict[str, float]) -> None:
        loader = getattr(runner, f"{mode}_dataloader", None)
        progress = ""
        if loader is not None:
            batches = loader_length(loader)
            if batches is not None:
                progress = f"[{batches}/{batches}]"
            else:  # no length: the batches the loop ran
                progress = f"[{getattr(getattr(runner, f'{mode}_loop', None), 'num_batches', 0)}]"
        if not runner.by_epoch:
            where = f"Iter({mode}) {progress}".rstrip()
        elif mode == "val":  # MMEngine's LogProcessor: epoch 0 before any training
            where = f"Epoch(val) [{runner.epoch}]{progress}"
        else:  # a test names no epoch
            where = f"Epoch({mode}) {progress}".rstrip()
        ordered = {k: metrics[k] for k in sorted(metrics, key=lambda k: k != "loss")}
        weights = runner.message_hub.info.get(EVAL_WEIGHTS_KEY)
        named = isinstance(weights, str) and bool(weights)
        tag = [f"({str(weights).upper()} weights)"] if named else []  # e.g. "(EMA weights)"
        log_queued(runner.logger, logging.INFO,
                   "  ".join([where, *tag] + [f"{k}: {_fmt(v)}" for k, v in ordered.items()]))
        # an iteration-based run is one epoch: its val records say 1, as its train records do
        epoch = runner.epoch if runner.by_epoch else runner.epoch + 1
        record: dict[str, Any] = {"mode": mode, "epoch": epoch, "iter": runner.iter}
        if named:
            record["weights"] = weights
        self._write(runner, {**record, **ordered})


@HOOKS.register()
class TextLoggerHook(LoggerHook):
    """mmcv's name for :class:`LoggerHook` (text + JSON lines); same arguments.

    Example::

        >>> TextLoggerHook(interval=5).interval
        5
    """

    def __repr__(self) -> str:
        return f"TextLoggerHook(interval={self.interval}, by_epoch={self.by_epoch})"
