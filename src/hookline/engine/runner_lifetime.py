"""A Runner's run lifetime: entering a run (and leaving it on any exit), stopping on a
signal, closing what the Runner holds open.

:class:`~hookline.engine.Runner` inherits these methods. ``with Runner(...) as
runner:`` closes the Runner at the end of the block; a closed Runner refuses to
run again.

Example::

    >>> import tempfile, torch
    >>> from hookline.engine import Runner
    >>> with Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
    ...             work_dir=tempfile.mkdtemp(), default_hooks={"logger": None}) as runner:
    ...     runner.running is None
    True
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError

from .base_loop import holding_runner
from .checkpoint import CheckpointError, CheckpointWriter
from .distributed import any_rank
from .folder_lock import lock_folder
from .hook_table import HookTable
from .logs import close_logger, set_current_logger
from .message_hub import MessageHub
from .run_state import RunState
from .signals import StopRequest, TrainingInterrupted, interrupt_on_signal, log_failure
from .step import trainable, wrap_for_training
from .visualizer import Visualizer

if TYPE_CHECKING:  # pragma: no cover
    from .loops import TrainLoop, ValLoop
    from .runner import Runner

__all__ = ["RunnerLifetime"]


class RunnerLifetime:
    """How a Runner enters and leaves runs, stops on signals and closes (the Runner sets the
    attributes below)."""

    hooks: HookTable
    logger: logging.Logger
    message_hub: MessageHub
    visualizer: Visualizer
    checkpoint_writer: CheckpointWriter
    state: RunState
    work_dir: Path
    rank: int
    running: str | None
    signal_sync_interval: int
    ddp_model: Any
    model: torch.nn.Module
    loss_fn: Callable[..., Any] | None
    device: torch.device
    _ddp_kwargs: Any
    _ddp_trainable: tuple[bool, ...]
    outputs: dict[str, Any] | None
    train_loop: TrainLoop | None
    val_loop: ValLoop | None
    test_loop: ValLoop | None
    _closed: bool
    _stop: StopRequest | None
    _stop_group: Any
    _train_step: Callable[..., dict[str, Any]] | None
    _eval_steps: dict[str, Callable[..., Any]]

    @contextlib.contextmanager
    def _work_dir_locked(self) -> Iterator[None]:
        """``work_dir/run.lock`` held while this process trains there (rank 0, which writes
        the checkpoints): another process training into it is refused before anything is
        written (:mod:`~hookline.engine.folder_lock`). A work_dir made for the lock and left
        empty (a start that failed) is removed again."""
        lock, made = None, False
        if self.rank == 0:
            made = not self.work_dir.exists()
            self.work_dir.mkdir(parents=True, exist_ok=True)
            lock = lock_folder(self.work_dir, "give this Runner another work_dir, or wait "
                                              "for that run to end")
        try:
            yield
        finally:
            if lock is not None:
                lock.release()
            if made:
                with contextlib.suppress(OSError):  # not empty: the run wrote its files
                    self.work_dir.rmdir()

    @contextlib.contextmanager
    def _running(self, mode: str) -> Iterator[None]:
        if self._closed:
            raise ConfigError(f"{mode}() on a Runner that was closed (runner.close(), or the end "
                              "of its `with Runner(...) as runner:` block): build a new Runner")
        with holding_runner(self._as_runner(), [self.train_loop, self.val_loop, self.test_loop]), \
                self._running_mode(mode):
            yield

    @contextlib.contextmanager
    def _running_mode(self, mode: str) -> Iterator[None]:
        self._train_step, self._eval_steps = None, {}  # the model may have changed between runs
        self.running = mode
        self.message_hub.make_current()
        self.visualizer.make_current()
        set_current_logger(self.logger)
        self.hooks.call(self._as_runner(), "before_run")
        try:
            yield
            self.checkpoint_writer.close()  # everything written; no thread left behind
        except BaseException as exc:
            try:
                self.checkpoint_writer.close()
            except CheckpointError as error:  # the original error matters more; still say it
                self.logger.error("%s", error)
            except Exception:
                self.logger.exception("a background checkpoint write failed")
            self.hooks.call_on_exception(self._as_runner(), exc, self.logger)
            if isinstance(exc, TrainingInterrupted):
                self.logger.warning("%s", exc.message)
            else:  # a failure (a hook raising) or a second Ctrl-C: into log.txt too
                log_failure(self.logger, mode, exc, self.work_dir)
            self.running = None
            raise
        self.hooks.call(self._as_runner(), "after_run")
        self.running = None

    def rewrap_if_trainability_changed(self) -> bool:
        """Under DDP, after hooks that may freeze or unfreeze parameters (the train loop calls
        it after ``before_train`` and each ``before_train_epoch``): when which parameters need
        a gradient changed on any rank, build the DistributedDataParallel wrapper again, as
        DDP synchronises only those it was built with (an unfrozen backbone would train apart
        on every rank; a frozen one would stall its reducer). True when it rebuilt."""
        if not isinstance(self.ddp_model, torch.nn.parallel.DistributedDataParallel):
            return False
        now = trainable(self.model)
        if not any_rank(now != self._ddp_trainable, self._stop_group):
            return False
        before, self._ddp_trainable = self._ddp_trainable, now
        self.ddp_model = wrap_for_training(self.model, self.loss_fn, self.device,
                                           self._ddp_kwargs)
        self._train_step = None  # the step trains through the new wrapper
        self.logger.info("DistributedDataParallel rebuilt: %d of %d parameters need a gradient "
                         "now (%d before)", sum(now), len(now), sum(before))
        return True

    def check_stop(self, after_iteration: bool = False) -> bool:
        """Stop on ``stop_training``, or checkpoint and exit on a signal (on any rank: the
        ranks agree over a gloo group, after every ``signal_sync_interval``-th iteration
        and at every other point the loops check)."""
        stop = self._stop
        if stop is not None:
            group = self._stop_group
            if group is None:
                if stop.signum is not None:  # one process: only its own flag to look at
                    interrupt_on_signal(self._as_runner(), stop)
            elif not after_iteration or self.state.iter % self.signal_sync_interval == 0:
                interrupt_on_signal(self._as_runner(), stop, group)
        return self.state.stop_training

    def close(self) -> None:
        """Release what the Runner holds open: finish background checkpoint writes, end the
        logger's writer thread and close ``log.txt``, close the visualizer's files, drop the
        last outputs and the cached steps. Idempotent; a closed Runner refuses to run again
        (``ConfigError``: build a new one). ``with Runner(...) as runner:`` closes it at the
        end of the block."""
        if self._closed:
            return
        self._closed = True
        try:
            self.checkpoint_writer.close()
        finally:
            self.visualizer.close()
            close_logger(self.logger)
            self.outputs, self._train_step, self._eval_steps = None, None, {}

    def __enter__(self) -> Runner:
        return self._as_runner()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def release_distributed(self) -> Any:
        """Drop what holds the process group: the DistributedDataParallel wrapper and the
        stop-flag group. Returns that group (None on one process) for the caller to drop
        last, once the wrapper is collected (see ``environment.release_at_exit``)."""
        group, self._stop_group = self._stop_group, None
        self.ddp_model = None
        self._train_step = None
        return group

    def _as_runner(self) -> Runner:
        """This object as the Runner it is part of (for calls typed with ``Runner``)."""
        return self  # type: ignore[return-value]  # a mixin of Runner only
