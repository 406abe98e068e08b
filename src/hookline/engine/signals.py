"""Graceful stop on SIGTERM / SIGINT: finish the iteration, checkpoint, exit non-zero.

The first signal is acknowledged at once with one line on stderr (written
with ``os.write``, safe inside a handler): the current stage finishes, then
a checkpoint is saved. A second Ctrl-C stops at once without saving: one
line says so and names the run's last checkpoint, and :func:`log_failure`
puts the interruption (like any failure of a run) into ``log.txt``.

Example::

    >>> from hookline.engine.signals import StopRequest
    >>> with StopRequest() as stop:
    ...     stop.signum is None
    True
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from .checkpoint import read_latest
from .distributed import any_rank
from .logs import FILE_ONLY, log_file_started
from .run_state import describe_position

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner


class TrainingInterrupted(SystemExit):
    """Training stopped on a signal after saving a checkpoint.

    A ``SystemExit``: uncaught, the process exits with code ``128 + signum``
    and no traceback. ``checkpoint`` is the path to resume from.
    """

    def __init__(self, signum: int, checkpoint: Any, message: str) -> None:
        super().__init__(128 + signum)
        self.signum = signum
        self.checkpoint = checkpoint
        self.message = message

    def __str__(self) -> str:
        return self.message


def _say(text: str) -> None:
    """One line to stderr from a signal handler (``os.write``: no buffered stream that the
    interrupted code may be writing to); only the main process (``RANK`` 0) says it."""
    if os.environ.get("RANK", "0") == "0":
        try:
            os.write(2, f"hookline: {text}\n".encode("utf-8", "replace"))
        except OSError:  # stderr closed: nobody to tell
            pass


def last_checkpoint_note(work_dir: str | Path | None) -> str:
    """``"the last checkpoint is X"`` (``work_dir``'s ``latest`` pointer), or that there
    is none."""
    latest = None
    if work_dir is not None:
        try:
            latest = read_latest(work_dir)
        except Exception:  # an unreadable pointer: as good as none here
            latest = None
    if latest is not None and latest.is_file():
        return f"the last checkpoint is {latest} (--resume auto continues from it)"
    return "this run has saved no checkpoint"


class StopRequest:
    """Records SIGTERM/SIGINT while active; a second SIGINT interrupts at once.

    ``work_dir`` (the run's folder) lets the line a second Ctrl-C prints name the
    last checkpoint."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, work_dir: str | Path | None = None) -> None:
        self.signum: int | None = None
        self.work_dir = work_dir
        self._previous: dict[int, Any] = {}
        self._pid = os.getpid()

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if os.getpid() != self._pid:  # a forked DataLoader worker: the default behaviour
            signal.signal(signum, signal.SIG_DFL)
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            os.kill(os.getpid(), signum)
            return
        if self.signum is not None and signum == signal.SIGINT:
            _say(f"Ctrl-C again: stopping at once; no checkpoint saved for this stop; "
                 f"{last_checkpoint_note(self.work_dir)}")
            raise KeyboardInterrupt
        first = self.signum is None
        self.signum = signum  # before saying so: a second signal may arrive while it is said
        if first:
            _say(f"{signal.Signals(signum).name} received: finishing the current stage (an "
                 "iteration, a validation, a checkpoint save), then saving a checkpoint and "
                 "stopping; Ctrl-C again stops at once without saving")

    def __enter__(self) -> StopRequest:
        self._pid = os.getpid()
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""


@contextlib.contextmanager
def stopping_for_signalled_workers(runner: Runner) -> Iterator[None]:
    """Around a pass over the training data: a signal sent to the whole process group (SLURM's
    ``scancel``, ``kill -TERM -PGID``, Ctrl-C in a terminal) reaches the DataLoader's workers
    too, and the pass fails ("DataLoader worker ... exited unexpectedly") before the loop's
    next safe point. In one process, when such a signal came, that failure is the stop: a
    checkpoint after the last finished iteration and :class:`TrainingInterrupted`, as at any
    other point. (Under torchrun the ranks could not agree on it: the error stands.)"""
    try:
        yield
    except RuntimeError as exc:
        if "DataLoader worker" not in str(exc) or runner.world_size > 1:
            raise
        time.sleep(0.2)  # the main process's own handler runs in here if the signal is late
        try:
            runner.check_stop()
        except TrainingInterrupted as stop:
            raise stop from None
        raise


def _stop_checkpoint_hooks(runner: Runner) -> list[Any]:
    """The hooks that keep track of the checkpoint a signal stop writes (CheckpointHook's
    keep-N: ``note_stop_checkpoint`` before the save, ``after_stop_checkpoint`` after it)."""
    return [hook for hook in runner.hooks.hooks
            if callable(getattr(hook, "note_stop_checkpoint", None))
            and callable(getattr(hook, "after_stop_checkpoint", None))]


def interrupt_on_signal(runner: Runner, stop: StopRequest, group: Any = None) -> None:
    """When ``stop`` caught a signal (here, or on another rank of ``group``): save a checkpoint
    of ``runner`` and raise :class:`TrainingInterrupted` with the resume command."""
    signalled = stop.signum is not None
    if group is not None:
        signalled = any_rank(signalled, group)
    if not signalled:
        return
    name = f"iter_{runner.iter}.pth"
    keepers = _stop_checkpoint_hooks(runner)
    for hook in keepers:  # its state in the file records it, for deletion once superseded
        hook.note_stop_checkpoint(runner, name)
    path = runner.save_checkpoint(name)
    for hook in keepers:
        hook.after_stop_checkpoint(runner, name)
    state = runner.state
    where = describe_position(*state.resume_point, by_epoch=state.by_epoch,
                              val_pending=state.val_pending)
    command = getattr(runner, "resume_command", None)  # hookline train sets the one it ran
    how = (f"Resume with: {command}" if isinstance(command, str) else
           f"Resume with resume='auto' (hookline train ... --resume auto) or resume='{path}'")
    raise TrainingInterrupted(stop.signum or signal.SIGTERM, path, (
        f"stopped by {stop.name or 'a signal on another rank'} {where}; checkpoint saved to "
        f"{path}. {how}"))


def log_failure(logger: logging.Logger, mode: str, exc: BaseException,
                work_dir: str | Path | None) -> None:
    """Put what ended a ``mode`` run (``"train"`` ...) into ``log.txt`` only (the console
    shows the error as it propagates): a failure as one ERROR line with its traceback, an
    interruption (a second Ctrl-C) with the last checkpoint. A signal stop
    (:class:`TrainingInterrupted`) is logged where it is raised; other exits are not. A run
    that has written no line yet (a refused resume) writes none now: a failed start changes
    no file of the run it tried to continue."""
    if not log_file_started(logger):
        return
    if isinstance(exc, KeyboardInterrupt):
        logger.error("%s interrupted (Ctrl-C): stopped at once, no checkpoint saved for this "
                     "stop; %s", mode, last_checkpoint_note(work_dir), extra=FILE_ONLY)
    elif isinstance(exc, Exception):
        summary = " ".join(str(exc).split())[:500]
        logger.error("%s failed: %s%s", mode, type(exc).__name__, f": {summary}" if summary
                     else "", exc_info=exc, extra=FILE_ONLY)
