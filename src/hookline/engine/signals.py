"""Graceful stop on SIGTERM / SIGINT: finish the iteration, checkpoint, exit non-zero.

Example::

    >>> from hookline.engine.signals import StopRequest
    >>> with StopRequest() as stop:
    ...     stop.signum is None
    True
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING, Any

from .distributed import any_rank
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


class StopRequest:
    """Records SIGTERM/SIGINT while active; a second SIGINT interrupts at once."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.signum is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signum = signum

    def __enter__(self) -> StopRequest:
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
    raise TrainingInterrupted(stop.signum or signal.SIGTERM, path, (
        f"stopped by {stop.name or 'a signal on another rank'} {where}; checkpoint saved to "
        f"{path}. Resume with resume='auto' (hookline train ... --resume auto) or "
        f"resume='{path}'"))
