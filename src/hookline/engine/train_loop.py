"""What both train loops share (:class:`TrainLoop`): the counters, the stop flag, when
validation runs, and one training iteration. :class:`~hookline.engine.loops.EpochBasedTrainLoop`
and :class:`~hookline.engine.loops.IterBasedTrainLoop` subclass it.

Example::

    >>> from hookline.engine.loops import EpochBasedTrainLoop, IterBasedTrainLoop
    >>> issubclass(EpochBasedTrainLoop, TrainLoop), IterBasedTrainLoop.by_epoch
    (True, False)
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from hookline.core import HookError

from .base_loop import BaseLoop, note_where
from .checks import positive_int
from .data import loader_length, move_to
from .data_pass import LookAheadPass, start_pass
from .rng import rng_kept
from .run_state import describe_position
from .unfinished_stage import UnfinishedStage

if TYPE_CHECKING:  # pragma: no cover
    from .run_state import RunState
    from .runner import Runner

__all__ = ["TrainLoop"]


class TrainLoop(BaseLoop):
    """What both train loops share: counters, the stop flag, when validation runs, one iteration."""

    by_epoch = True

    def __init__(self, runner: Runner, dataloader: Any, *, val_begin: int = 1,
                 val_interval: int = 1) -> None:
        super().__init__(runner, dataloader)
        self.val_begin = positive_int(val_begin, "val_begin")
        self.val_interval = positive_int(val_interval, "val_interval")
        self._pass: LookAheadPass | None = None  # the pass over a loader without a length
        self._seen_length: int | None = None  # batches in the latest full pass over such a loader
        self._sized_pass_length: int | None = None  # len() of the sized loader of the running pass
        self._unfinished: UnfinishedStage | None = None  # after_train_iter hooks a failure skipped

    # -- MMEngine's attributes -------------------------------------------------------------
    @property
    def state(self) -> RunState:
        return self.runner.state

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def iter(self) -> int:
        return self.state.iter

    @property
    def stop_training(self) -> bool:
        return self.state.stop_training

    @stop_training.setter
    def stop_training(self, value: bool) -> None:
        self.state.stop_training = bool(value)

    @property
    def epoch_length(self) -> int | None:
        """Batches in one pass over the current dataloader. For a loader without a length:
        the current pass's once its last batch is read (one batch ahead), else the latest
        full pass's (at least the batches read so far); None before a pass has ended."""
        length = self._sized_pass_length  # read every iteration by the loggers: no len() then
        if length is not None:
            return length
        length = loader_length(self.dataloader)
        if length is not None:
            return length
        current, seen = self._pass, self._seen_length
        if current is None:
            return seen
        if current.exhausted:
            return current.fetched
        return None if seen is None else max(seen, current.fetched)

    @property
    @abc.abstractmethod
    def max_epochs(self) -> int | None:
        """Passes over the data the run makes (None: not known yet)."""

    @property
    @abc.abstractmethod
    def max_iters(self) -> int | None:
        """Iterations the run makes (None: not known yet)."""

    # -- when validation runs: the one place that decides ----------------------------------
    def _val_due(self, done: int, last: int) -> bool:
        return (self.runner.val_loop is not None and done >= self.val_begin
                and (done % self.val_interval == 0 or done == last))

    def val_due_after_epoch(self, epochs_done: int) -> bool:  # noqa: ARG002  (epoch-based loops use it)
        """Whether validation runs right after ``epochs_done`` epochs finish."""
        return False

    def val_due_after_iter(self, iters_done: int) -> bool:  # noqa: ARG002  (iteration-based loops use it)
        """Whether validation runs right after ``iters_done`` iterations finish."""
        return False

    # -- one iteration ------------------------------------------------------------------------
    def run_iteration(self, batch_idx: int, data_batch: Any, batch_in_epoch: int) -> None:
        """Hooks, the model's step and the optimizer update, hooks; then count the iteration
        (``batch_in_epoch``: its position in the pass over the data). The loops call it through
        MMEngine's ``run_iter``, which a subclass may override."""
        runner = self.runner
        hooks = runner.hooks
        stages = hooks.stages
        data_batch = move_to(data_batch, runner.device)
        if stages["before_train_iter"]:
            hooks.callers["before_train_iter"](runner, batch_idx=batch_idx, data_batch=data_batch)
        try:
            outputs = runner.train_step(data_batch, batch_in_epoch)
        except Exception as exc:
            note_where(exc, f"hookline: raised in the training step of iteration {self.iter} "
                       f"(epoch {self.epoch + 1}, batch {batch_in_epoch})")
            raise
        runner.outputs = outputs
        runner.message_hub.update_many("train", outputs)
        self.state.complete_iter(batch_in_epoch, self._val_follows_iter())
        if stages["after_train_iter"]:
            try:
                hooks.callers["after_train_iter"](runner, batch_idx=batch_idx,
                                                  data_batch=data_batch, outputs=outputs)
            except HookError as exc:  # the hooks after the one that raised run at train() again
                self._unfinished = UnfinishedStage.after(
                    exc.hook, stages["after_train_iter"], self.state.resume_point,
                    {"batch_idx": batch_idx, "data_batch": data_batch, "outputs": outputs},
                    "after_train_iter")
                raise
        self.state.advance_iter()

    def _finish_stopped_iter(self) -> None:
        """``train()`` again after a hook raised in ``after_train_iter``: the hooks after it
        get that iteration first (:class:`~.unfinished_stage.UnfinishedStage`), unless a
        checkpoint loaded since then moved the run."""
        if self._unfinished is not None:  # kept, with the hooks left, when one raises again
            self._unfinished.run(self.runner, self.state.resume_point)
            self._unfinished = None

    def _start_pass(self, loader: Any, start: int) -> tuple[Iterator[Any], int]:
        """A pass over ``loader`` after its first ``start`` batches (:func:`start_pass`),
        batched by indexing unless the Runner has ``fast_data=False``."""
        runner = self.runner
        return start_pass(loader, start, fast=runner.fast_data, device=runner.device)

    def _val_follows_iter(self) -> bool:
        """Whether validation runs right after the iteration that is ending (iteration-based)."""
        return False

    def _validate_pending(self) -> None:
        """After a resume from a checkpoint written between the end of an epoch (or
        iteration) and the end of its validation's ``after_val_epoch`` hooks: run that
        validation first, as the run would have. When the checkpoint was written after its
        metrics were computed (by an ``after_val_epoch`` hook), the RNGs it restored had
        already advanced past the validation: it runs with them put back afterwards."""
        if self.state.val_pending and self.runner.val_loop is not None:
            if self.runner.val_loop.finish_stopped():  # train() again: its after_val_epoch
                self.runner.check_stop()
                return
            if self.state.val_computed:
                with rng_kept():
                    self._validate()
            else:
                self._validate()
            self.runner.check_stop()

    def _say_if_stopped_early(self, started: int, short: bool) -> None:
        """One log line (log.txt too) when ``stop_training`` ended this ``train()`` before its
        length (``short``) after it trained (from iteration ``started``): whoever set it (an
        early stopping hook, a Keras or Lightning callback) may only have said so on the
        console."""
        if self.stop_training and short and self.iter > started:
            self.runner.logger.info("training stopped early %s: stop_training was set (by a "
                                    "hook or callback)", describe_position(
                                        *self.state.resume_point, by_epoch=self.by_epoch))

    def _say_if_done(self) -> None:
        """One log line when a resumed run has nothing left to train."""
        state = self.state
        if state.val_pending:
            return
        epochs, iters = self.max_epochs, self.max_iters
        if state.stop_training:
            reason = "the run had stopped early (stop_training, e.g. by early stopping)"
        elif self.by_epoch and epochs is not None and state.epoch >= epochs:
            reason = f"all {epochs} epochs are done; raise max_epochs to train on"
        elif not self.by_epoch and iters is not None and state.iter >= iters:
            reason = f"all {iters} iterations are done; raise max_iters to train on"
        else:
            return
        self.runner.logger.info("nothing left to train %s: %s", describe_position(
            *state.resume_point, by_epoch=self.by_epoch), reason)

    def _count_updates(self, start: int, total: int) -> None:
        """Accumulation groups count from ``start`` of ``total`` iterations (an epoch, or the run)."""
        wrapper = self.runner.optim_wrapper
        if wrapper is not None:
            wrapper.initialize_count_status(self.runner.model, start, total)

    def _validate(self) -> None:
        assert self.runner.val_loop is not None
        self.runner.val_loop.run()
