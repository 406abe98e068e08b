"""The loops the Runner drives, as objects with MMEngine's names and meaning.

``runner.train_loop`` is an :class:`EpochBasedTrainLoop` or an
:class:`IterBasedTrainLoop`; ``runner.val_loop`` / ``runner.test_loop`` are
:class:`ValLoop` / :class:`TestLoop`. Each fires MMEngine's stages in
MMEngine's order. All are registered in ``LOOPS``, so a config may name its
own subclass (``train_loop: {type: MyLoop}``).

The position of the run (epoch, iteration, where to resume, the stop request)
belongs to ``runner.state`` (:class:`~hookline.engine.run_state.RunState`);
the train loop moves it, nothing else does.

Example::

    >>> from hookline.engine.loops import LOOPS
    >>> {"EpochBasedTrainLoop", "IterBasedTrainLoop", "ValLoop", "TestLoop"} <= set(LOOPS)
    True
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError

from .base_loop import BaseLoop
from .checks import positive_int
from .data import ends_at_length, loader_length, set_epoch
from .data_pass import LookAheadPass, warn_inexact_resume
from .eval_loop import TestLoop, ValLoop
from .loop_config import train_loop_config
from .registries import LOOPS
from .run_state import describe_position
from .signals import stopping_for_signalled_workers
from .train_loop import TrainLoop

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner

__all__ = ["LOOPS", "BaseLoop", "EpochBasedTrainLoop", "IterBasedTrainLoop", "TestLoop",
           "TrainLoop", "ValLoop", "train_loop_config"]


@LOOPS.register()
class EpochBasedTrainLoop(TrainLoop):
    """``max_epochs`` passes over the training data, validating every ``val_interval`` epochs
    from epoch ``val_begin`` on (and after the last epoch)."""

    def __init__(self, runner: Runner, dataloader: Any, max_epochs: int, val_begin: int = 1,
                 val_interval: int = 1) -> None:
        super().__init__(runner, dataloader, val_begin=val_begin, val_interval=val_interval)
        self._max_epochs = positive_int(max_epochs, "max_epochs")
        # fixed here, as in MMEngine: a loader swapped in later does not change the plan
        length = loader_length(dataloader)
        self._max_iters = None if length is None else self._max_epochs * length
        self._epoch_start_iter = 0  # the iteration the current epoch started at

    @property
    def max_epochs(self) -> int:
        return self._max_epochs

    @property
    def max_iters(self) -> int | None:
        """``max_epochs`` x batches per epoch of the loader the loop was built with. For a
        loader without a length: from :attr:`epoch_length` (the epochs left counted as long
        as it), so exact at the last batch of the run; None before a pass has ended."""
        if self._max_iters is not None:
            return self._max_iters
        length = self.epoch_length
        if length is None:
            return None
        return self._epoch_start_iter + (self._max_epochs - self.epoch) * length

    def val_due_after_epoch(self, epochs_done: int) -> bool:
        return self._val_due(epochs_done, self._max_epochs)

    def run(self) -> torch.nn.Module:
        runner = self.runner
        self._continue_stopped_epoch()
        runner.hooks.call(runner, "before_train")
        runner.rewrap_if_trainability_changed()  # a hook froze or unfroze layers (DDP)
        self._say_if_done()
        started = self.iter
        self._validate_pending()
        while self.epoch < self._max_epochs and not self.stop_training:
            epoch = self.epoch
            finished = self.run_epoch()  # an override written for MMEngine returns None
            if finished is False or (finished is None and self.epoch == epoch):
                break  # stopped mid-epoch
            runner.check_stop()  # a signal during the epoch-end stages stops before validation
            if self.val_due_after_epoch(self.epoch):
                self._validate()
                runner.check_stop()
        self._say_if_stopped_early(started, self.epoch < self._max_epochs)
        runner.hooks.call(runner, "after_train")
        runner.check_stop()  # a signal while training ended is not lost either
        return runner.model

    def _continue_stopped_epoch(self) -> None:
        """``train()`` again after a stop in the middle of an epoch: that epoch continues
        where the state says it stopped (:meth:`RunState.continue_stopped_epoch`), its data
        order replayed as a resume from a checkpoint replays it."""
        self._finish_stopped_iter()
        start = self.state.continue_stopped_epoch()
        if start:
            self.runner.logger.info("train() again: continuing %s", describe_position(
                self.epoch, start, self.iter))

    def run_iter(self, idx: int, data_batch: Any) -> None:
        """Iteration ``idx`` of the epoch (MMEngine's signature, for subclasses to override):
        :meth:`~.train_loop.TrainLoop.run_iteration`."""
        self.run_iteration(idx, data_batch, idx)

    def run_epoch(self) -> bool:
        """One pass (the rest of it, after a resume), then the epoch-end stages; False when
        training stopped before the pass ended."""
        runner, state = self.runner, self.state
        start = state.take_resume_batch()
        self._epoch_start_iter = self.iter - start
        runner.hooks.call(runner, "before_train_epoch")
        if self.stop_training:  # a hook stopped the run as the epoch began: no batch of it runs
            return False
        runner.rewrap_if_trainability_changed()
        loader = self.dataloader  # a loader a hook assigned, even in before_train_epoch, runs now
        length = loader_length(loader)
        set_epoch(loader, self.epoch)
        if start:  # resumed mid-epoch: checked against the loader this epoch really runs
            self._check_resume_batch(loader, start, length)
        if length is None:
            length = self._run_unsized_pass(loader, start)
        else:
            self._count_updates(start, length)
            if start < length:
                iterator, _ = self._start_pass(loader, start)
                self._sized_pass_length = length
                try:
                    with stopping_for_signalled_workers(runner):
                        for batch_idx, data_batch in enumerate(iterator, start):
                            self.run_iter(batch_idx, data_batch)
                            if runner.check_stop(after_iteration=True):
                                break
                finally:
                    self._sized_pass_length = None
        if self.stop_training and state.batch < length:
            return False
        state.complete_epoch(self.val_due_after_epoch(self.epoch + 1))
        runner.hooks.call(runner, "after_train_epoch")
        state.advance_epoch()
        self._epoch_start_iter = self.iter
        return True

    def _check_resume_batch(self, loader: Any, start: int, length: int | None) -> None:
        """A resumed epoch starts after batch ``start``: refuse a loader with fewer batches
        (the load-time check let it pass when the checkpoint's epoch ran on a loader of
        another length, one a hook switches to in ``before_train_epoch``), and say when the
        pass cannot replay the interrupted one exactly."""
        if length is not None and start > length:
            raise ConfigError(
                f"the resumed checkpoint stopped after batch {start} of epoch {self.epoch + 1}, "
                f"and this epoch's train dataloader has {length} batches (another data set or "
                "batch size, or a loader switched in before_train_epoch that is not switched "
                "the same way now?)")
        if length is None or start < length:  # batches of the pass are left to run
            warn_inexact_resume(self.runner, loader)

    def _run_unsized_pass(self, loader: Any, start: int) -> int:
        """The epoch's batches from a loader without a length, read one ahead so that the
        last is known before its step runs; returns the pass's length (once read to its
        end; else more than the batches done)."""
        iterator, skipped = self._start_pass(loader, start)  # a resumed epoch: read and dropped
        if skipped < start:
            self.runner.logger.warning(
                "train_dataloader: epoch %d has %d batches, fewer than the %d the checkpoint "
                "had done (the data changed?): the epoch ends there", self.epoch + 1, skipped,
                start)
            return skipped
        data = self._pass = LookAheadPass(iterator, start, loader)
        self._count_updates(start, -1)  # group sizes as if the pass went on
        try:
            with stopping_for_signalled_workers(self.runner):
                for batch_idx, data_batch in data:
                    if data.exhausted:  # the last, maybe shorter, accumulation group steps here
                        self._count_updates(batch_idx, batch_idx + 1)
                    self.run_iter(batch_idx, data_batch)
                    if self.runner.check_stop(after_iteration=True):
                        break
            if data.exhausted:
                self._seen_length = data.fetched
        finally:
            self._pass = None
        return data.fetched


@LOOPS.register()
class IterBasedTrainLoop(TrainLoop):
    """``max_iters`` iterations, cycling the data; ``batch_idx`` is the global iteration
    (MMEngine's meaning) and the epoch stages fire once, around the whole run. (A model's
    ``training_step(batch, batch_idx)`` gets the position in the current pass over the data.)"""

    by_epoch = False

    def __init__(self, runner: Runner, dataloader: Any, max_iters: int, val_begin: int = 1,
                 val_interval: int = 1000) -> None:
        super().__init__(runner, dataloader, val_begin=val_begin, val_interval=val_interval)
        self._max_iters = positive_int(max_iters, "max_iters")
        length = loader_length(dataloader)
        self._max_epochs = None if length is None else math.ceil(self._max_iters / length)
        self._origin = (0, 0)  # a loader without a length: (current pass, its first iteration)
        # a loader with one: (pass, its first iteration) of the pass running (or last run),
        # and of the pass that starts next once one ended
        self._sized_origin: tuple[int, int] | None = None
        self._sized_next: tuple[int, int] | None = None
        self._position = 0  # the running iteration's batch in its pass over the data

    @property
    def max_iters(self) -> int:
        return self._max_iters

    @property
    def max_epochs(self) -> int | None:
        """Passes over the data the run makes (the last one may be partial); for a loader
        without a length, counted in :attr:`epoch_length` (None before a pass has ended)."""
        if self._max_epochs is not None:
            return self._max_epochs
        length = self.epoch_length
        return None if length is None else math.ceil(self._max_iters / length)

    def val_due_after_iter(self, iters_done: int) -> bool:
        return self._val_due(iters_done, self._max_iters)

    def _val_follows_iter(self) -> bool:
        return self._val_due(self.iter + 1, self._max_iters)

    def run_iter(self, data_batch: Any) -> None:
        """The next iteration (MMEngine's signature, for subclasses to override):
        :meth:`~.train_loop.TrainLoop.run_iteration` at ``iter``."""
        self.run_iteration(self.iter, data_batch, self._position)

    def run(self) -> torch.nn.Module:
        runner = self.runner
        # train() again after a stop in after_train_iter: that iteration's step ran, it counts
        # (:meth:`RunState.continue_stopped_epoch`), as a checkpoint written there says
        done = self.iter
        self._finish_stopped_iter()
        self.state.continue_stopped_epoch()
        if self.iter != done:
            runner.logger.info("train() again: continuing %s", describe_position(
                *self.state.resume_point, by_epoch=False, val_pending=self.state.val_pending))
        runner.hooks.call(runner, "before_train")
        self._say_if_done()
        runner.hooks.call(runner, "before_train_epoch")
        runner.rewrap_if_trainability_changed()  # a hook froze or unfroze layers (DDP)
        started = self.iter
        self._count_updates(self.iter, self._max_iters)
        self._validate_pending()
        while self.iter < self._max_iters and not self.stop_training:
            loader = self.dataloader
            length = loader_length(loader)
            if length is None:
                batches: Iterator[tuple[int, Any]] = self._unsized_pass(loader)
            else:
                batches = self._sized_pass(loader, length)
            with stopping_for_signalled_workers(runner):
                for position, data_batch in batches:
                    self._position = position
                    self.run_iter(data_batch)
                    validated = self.val_due_after_iter(self.iter)
                    if validated:
                        self._validate()
                    # after a validation the ranks always agree (a safe point of its own)
                    if runner.check_stop(after_iteration=not validated) \
                            or self.iter >= self._max_iters:
                        break
        self._say_if_stopped_early(started, self.iter < self._max_iters)
        runner.hooks.call(runner, "after_train_epoch")
        runner.hooks.call(runner, "after_train")
        runner.check_stop()  # a signal while training ended is not lost either
        return runner.model

    def _sized_pass(self, loader: Any, length: int) -> Iterator[tuple[int, Any]]:
        """The rest of the current pass over a loader with a length, as ``(position in the
        pass, batch)``. A pass lasts as long as its loader yields: ``len(loader)`` batches,
        or the whole run for an endless sampler (MMEngine's ``InfiniteSampler``, whose
        ``len()`` is one round of the dataset). Where a run resumes (or trains again) in the
        middle of a pass, the pass starts again after the batches the run state says it did,
        skipped in the sampler (:func:`~hookline.engine.data_pass.start_pass`)."""
        data_pass, start = self._sized_start(loader, length)
        first = self.iter - start
        self._sized_origin = (data_pass, first)
        set_epoch(loader, data_pass)
        if start:  # the first pass after a resume in the middle of one
            warn_inexact_resume(self.runner, loader)
        iterator, skipped = self._start_pass(loader, start)
        if skipped < start:
            self.runner.logger.warning(
                "train_dataloader: pass %d over the data has %d batches, fewer than the %d "
                "the checkpoint had done of it (the data changed?): the next pass starts",
                data_pass + 1, skipped, start)
        yield from enumerate(iterator, start)  # each batch trains one iteration, in turn
        if start == 0 and self.iter == first:  # the pass yielded nothing
            raise ConfigError(f"train_dataloader yielded no batch in pass {data_pass + 1} over "
                              "its data: give it a sampler that yields indices")
        self._sized_next = (data_pass + 1, self.iter)

    def _sized_start(self, loader: Any, length: int) -> tuple[int, int]:
        """``(pass, batches of it done)`` where training goes on over a loader with a length:
        the next pass after one ended, else the pass in progress according to the run state
        (its ``batch``: the batches done of the pass, which began that many iterations ago;
        the pass number is known in this session, else counted in ``len(loader)`` passes);
        at a state that names no pass (a run's start, a checkpoint without it), iteration
        ``iter`` of ``len(loader)``-batch passes."""
        upcoming = self._sized_next
        if upcoming is not None and upcoming[1] == self.iter:
            return upcoming[0], 0
        done = self.state.batch
        if not done or done > self.iter:
            return divmod(self.iter, length)
        first = self.iter - done
        current = self._sized_origin
        data_pass = current[0] if current is not None and current[1] == first else first // length
        if done >= length and ends_at_length(loader):  # that pass is over: the next one
            return data_pass + 1, 0
        return data_pass, done

    def _unsized_pass(self, loader: Any) -> Iterator[tuple[int, Any]]:
        """The rest of the current pass over a loader without a length. Where a run resumes,
        the batches before it are read and dropped, pass after pass."""
        data_pass, first_iter = self._origin
        while True:
            set_epoch(loader, data_pass)
            skip = self.iter - first_iter
            iterator, skipped = self._start_pass(loader, skip)
            if skipped == skip:
                break
            if skipped == 0:
                break  # an empty pass: reported below
            self._seen_length = skipped
            data_pass, first_iter = data_pass + 1, first_iter + skipped
        self._origin = (data_pass, first_iter)
        position = skipped
        for data_batch in iterator:
            yield position, data_batch
            position += 1
        if position == 0:
            raise ConfigError(f"train_dataloader yielded no batch in pass {data_pass + 1} over "
                              "its data: give it a dataset that is not empty")
        self._seen_length = position
        self._origin = (data_pass + 1, first_iter + position)
