"""``RunState``: where a training run is, and the one object that moves it.

The train loop is the only caller of the moving methods; everything else
reads. Two positions are kept because hooks and checkpoints need different
ones during an iteration:

* the counters ``epoch`` / ``iter`` (MMEngine's meaning): finished epochs and
  finished iterations, advanced *after* the ``after_train_*`` hooks, so a
  hook in ``after_train_iter`` sees the 0-based index of the iteration that
  just ran;
* :attr:`resume_point` ``(epoch, batch, iter)``: where a checkpoint written
  at this moment resumes from, advanced *before* those hooks.

:attr:`val_pending` says that a validation is due at the resume point and its
``after_val_epoch`` hooks have not all run yet (from the end of an epoch or
iteration after which validation is due, to the end of those hooks), so a
checkpoint written in between (``after_train_epoch``, a signal before the
validation, a hook saving in ``after_val_epoch``) resumes with that
validation. :attr:`val_computed` says that its metrics were already computed
(a checkpoint from an ``after_val_epoch`` hook): the run had drawn whatever
the validation draws from the RNGs, so a resumed run repeats it with the RNGs
put back afterwards.

Example::

    >>> from hookline.engine.run_state import RunState
    >>> state = RunState(by_epoch=True)
    >>> state.complete_iter(0); state.resume_point, state.iter
    ((0, 1, 1), 0)
    >>> state.advance_iter(); state.iter
    1
    >>> state.restore(epoch=2, iteration=20, batch=4); state.take_resume_batch(), state.epoch
    (4, 2)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def describe_position(epoch: int, batch: int, iteration: int, *, by_epoch: bool = True,
                      val_pending: bool = False) -> str:
    """A resume point in words, counting epochs and batches from 1 as the log lines do
    (``Epoch(train) [3][5/45]`` ends where ``after batch 5 of epoch 3`` is).

    The one wording of a point: the line a signal stops a run with and the line a
    resumed run starts with name it the same way.

    Example::

        >>> describe_position(2, 0, 90), describe_position(2, 5, 95)
        ('after epoch 2 (iteration 90)', 'after batch 5 of epoch 3 (iteration 95)')
        >>> describe_position(0, 0, 40, by_epoch=False, val_pending=True)
        'after iteration 40, before its validation'
    """
    if not by_epoch:
        where = f"after iteration {iteration}"
    elif batch == 0:
        where = f"after epoch {epoch} (iteration {iteration})"
    else:
        where = f"after batch {batch} of epoch {epoch + 1} (iteration {iteration})"
    return where + (", before its validation" if val_pending else "")


class RunState:
    """The run's position (epoch, iteration, batch in the epoch, resume batch) and stop request.

    Args:
        by_epoch: whether the run counts epochs (``max_epochs``) or
            iterations (``max_iters``); :attr:`by_epoch` is the one place
            hookline asks "is this run epoch-based".
    """

    __slots__ = ("_batch", "_epoch", "_iter", "_point", "_resume_batch", "_val_computed",
                 "_val_pending", "by_epoch", "stop_training")

    def __init__(self, by_epoch: bool = True) -> None:
        self.by_epoch = by_epoch
        self._epoch = 0
        self._iter = 0
        self._batch = 0
        self._resume_batch = 0
        self._point = (0, 0, 0)
        self._val_pending = False
        self._val_computed = False
        #: set by a hook (or ``runner.stop_training = True``) to end training after this iteration
        self.stop_training = False

    # -- reading --------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """Finished training epochs (advanced after the ``after_train_epoch`` hooks)."""
        return self._epoch

    @property
    def iter(self) -> int:
        """Finished training iterations (advanced after the ``after_train_iter`` hooks)."""
        return self._iter

    @property
    def batch(self) -> int:
        """Batches finished in the current epoch (0 at an epoch boundary); in an
        iteration-based run, of the current pass over the data, which may go past
        ``len(train_dataloader)`` (an endless sampler)."""
        return self._batch

    @property
    def resume_point(self) -> tuple[int, int, int]:
        """``(epoch, batch, iter)`` a checkpoint written now resumes from."""
        return self._point

    @property
    def val_pending(self) -> bool:
        """Whether a validation is due at :attr:`resume_point` and its ``after_val_epoch``
        hooks have not all run yet."""
        return self._val_pending

    @property
    def val_computed(self) -> bool:
        """Whether the pending validation's metrics are computed (its ``after_val_epoch``
        hooks are running): a resumed run repeats it without drawing from the RNGs."""
        return self._val_computed

    # -- moving (the train loop's calls) ------------------------------------------------------
    def take_resume_batch(self) -> int:
        """The batch the current epoch starts at (after a resume), once; then 0."""
        start, self._resume_batch = self._resume_batch, 0
        self._batch = start
        return start

    def continue_stopped_epoch(self) -> int:
        """``train()`` again after a run stopped in the middle (an exception, a
        KeyboardInterrupt): it goes on as a resume from a checkpoint written where it stopped
        would. An iteration whose step ran (it stopped in ``after_train_iter``) counts as done,
        as a checkpoint written by one of its ``after_train_iter`` hooks says: the run goes on
        at the next iteration (after the validation due after it, in an iteration-based run),
        and the ``after_train_iter`` hooks that had not run yet get that iteration first
        (the train loop's :class:`~.unfinished_stage.UnfinishedStage`, before this). An
        iteration stopped before its step ran (in ``before_train_iter``, in the step) runs
        again. An epoch whose ``after_train_epoch`` hooks did not all run ends again, without
        running batches. In an epoch-based run, returns the batch the epoch continues at
        (0: nothing to continue; a pending resume batch, from a loaded checkpoint, is left as
        it is); 0 in an iteration-based run.

        Example::

            >>> state = RunState()
            >>> for batch in range(3):
            ...     state.complete_iter(batch); state.advance_iter()
            >>> state.complete_iter(3)  # stopped in after_train_iter of the 4th iteration
            >>> state.continue_stopped_epoch(), state.iter, state.resume_point
            (4, 4, (0, 4, 4))
        """
        if self._resume_batch:
            return 0
        epoch_point, _, point_iter = self._point
        if epoch_point == self._epoch and point_iter == self._iter + 1:
            self._iter = point_iter  # stopped in after_train_iter: its step ran, it counts
        if not self.by_epoch or not self._batch:
            return 0
        batch = self._batch
        if epoch_point != self._epoch:  # stopped in the epoch-end hooks: they run again
            self._val_pending = self._val_computed = False
        self._resume_batch = self._batch = batch
        self._point = (self._epoch, batch, self._iter)
        return batch

    def complete_iter(self, batch_in_epoch: int, val_due: bool = False) -> None:
        """An iteration's step ran (``batch_in_epoch`` is its 0-based index in the epoch);
        ``val_due``: validation follows it (iteration-based runs)."""
        self._batch = batch_in_epoch + 1
        self._point = (self._epoch, self._batch, self._iter + 1)
        self._val_pending = val_due

    def advance_iter(self) -> None:
        """The ``after_train_iter`` hooks ran: count the iteration."""
        self._iter += 1

    def complete_epoch(self, val_due: bool = False) -> None:
        """An epoch's iterations ran: a checkpoint now resumes at the next epoch (after the
        validation that follows it, when ``val_due``)."""
        self._point = (self._epoch + 1, 0, self._iter)
        self._val_pending = val_due
        self._val_computed = False

    def compute_val(self) -> None:
        """The pending validation computed its metrics; its ``after_val_epoch`` hooks run
        next (a checkpoint written by one of them repeats the validation, RNGs aside)."""
        self._val_computed = self._val_pending

    def complete_val(self) -> None:
        """The ``after_val_epoch`` hooks of the pending validation ran: a checkpoint no
        longer repeats it."""
        self._val_pending = False
        self._val_computed = False

    def advance_epoch(self) -> None:
        """The ``after_train_epoch`` hooks ran: count the epoch."""
        self._epoch += 1
        self._batch = 0

    def restore(self, epoch: int, iteration: int, batch: int = 0,
                stop_training: bool = False, val_pending: bool = False,
                val_computed: bool = False) -> None:
        """Put the run where a checkpoint says it was: ``batch`` is the batches done of the
        epoch (of the pass over the data in progress, in an iteration-based run, where the
        train loop reads it as :attr:`batch` to start that pass again after them)."""
        self._epoch, self._iter = int(epoch), int(iteration)
        self._resume_batch = int(batch) if self.by_epoch else 0
        self._batch = int(batch)
        self._point = (self._epoch, self._batch, self._iter)
        self.stop_training = bool(stop_training)
        self._val_pending = bool(val_pending)
        self._val_computed = self._val_pending and bool(val_computed)

    @contextlib.contextmanager
    def counting_current(self, unit: str) -> Iterator[None]:
        """Inside: the epoch (``unit="epoch"``) or iteration (``"iter"``) that is ending counts
        as finished, as it will once its ``after_train_*`` hooks return. For evaluations that
        hooks run at the end of an epoch or iteration (EvalHook), so that everything logged
        during them carries the count the Runner's own validation would show.

        Example::

            >>> state = RunState()
            >>> with state.counting_current("epoch"):
            ...     state.epoch
            1
            >>> state.epoch
            0
        """
        if unit not in ("epoch", "iter"):
            raise ValueError(f"unit must be 'epoch' or 'iter', got {unit!r}")
        name = f"_{unit}"
        setattr(self, name, getattr(self, name) + 1)
        try:
            yield
        finally:
            setattr(self, name, getattr(self, name) - 1)

    def __repr__(self) -> str:
        return (f"RunState(by_epoch={self.by_epoch}, epoch={self._epoch}, iter={self._iter}, "
                f"resume_point={self._point}, val_pending={self._val_pending}, "
                f"val_computed={self._val_computed}, "
                f"stop_training={self.stop_training})")
