"""One pass over a training loader that may have no length (an ``IterableDataset``).

:func:`start_pass` starts a pass after the batches a resumed run already did,
without loading them: hookline's own sampler skips them, and a DataLoader with
another sampler (MMEngine's ``InfiniteSampler``, a custom one) has their indices
drawn from its sampler; any other loader (an ``IterableDataset``, a DataLoader
subclass, a plain iterable) has them read and dropped. Either way the pass
replays the interrupted one when the loader's order is deterministic.

:class:`LookAheadPass` reads one batch ahead, so the loop knows that a batch is
the last of the pass *before* its step runs (as Lightning's data fetcher does):
the length of a pass over a loader without ``__len__`` is known at its last batch.
Loaders with a length never go through it (no extra work per iteration).

Example::

    >>> data = LookAheadPass(iter(range(2, 5)), start=2)  # resumed after 2 batches
    >>> [(index, batch, data.exhausted) for index, batch in data]
    [(2, 2, False), (3, 3, False), (4, 4, True)]
    >>> data.fetched
    5
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.data import RandomSampler

from .data import skip_batches
from .fast_batches import iter_batches, iter_batches_after

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner

__all__ = ["LookAheadPass", "running_pass", "start_pass"]

_END = object()
#: loader -> the pass over it the train loop is running (weak both ways: nothing kept alive)
_RUNNING: weakref.WeakKeyDictionary[Any, weakref.ref[LookAheadPass]] = weakref.WeakKeyDictionary()


def start_pass(loader: Iterable[Any], start: int, *, fast: bool = False,
               device: torch.device | None = None) -> tuple[Iterator[Any], int]:
    """An iterator over ``loader`` positioned after its first ``start`` batches, and how
    many batches it moved past (fewer than ``start`` when the pass is shorter).

    ``fast``: batches by indexing where that gives the DataLoader's batches
    (:func:`~hookline.engine.fast_batches.iter_batches`; ``device``: where they go).

    Example::

        >>> iterator, skipped = start_pass([10, 11, 12], 2)
        >>> list(iterator), skipped
        ([12], 2)
    """
    if start <= 0:
        return iter_batches(loader, enabled=fast, device=device), 0
    # A pass restarted at a resume point: the torch RNG state restored with the checkpoint
    # already counts what the pass drew up to there (the DataLoader's base seed, a sampler's
    # or the dataset's draws), so drawing them again here must leave it as it is.
    with torch.random.fork_rng(devices=[]):
        if skip_batches(loader, start):  # type: ignore[arg-type]
            return iter_batches(loader, enabled=fast, device=device), start
        # another sampler of a DataLoader: the skipped batches' indices drawn, not loaded
        resumed = iter_batches_after(loader, start, enabled=fast, device=device)
        if resumed is not None:
            return resumed
        iterator = iter_batches(loader, enabled=fast, device=device)
        skipped = sum(1 for _ in itertools.islice(iterator, start))  # read and dropped
    return iterator, skipped


class LookAheadPass:
    """``(index, batch)`` pairs of one pass, read one batch ahead.

    While a pair is being used, :attr:`exhausted` says whether it is the
    pass's last, and :attr:`fetched` counts the batches read so far
    (skipped ones included): the pass's length once exhausted, else a lower
    bound of it (the batch after the current one exists).

    Args:
        iterator: the pass, positioned after ``start`` batches
            (:func:`start_pass`).
        start: the index of its first batch.
    """

    def __init__(self, iterator: Iterator[Any], start: int = 0, loader: Any = None) -> None:
        self._iterator = iterator
        self.start = start
        self.fetched = start
        self.exhausted = False
        if loader is not None:  # found by running_pass(loader) while this pass exists
            try:
                _RUNNING[loader] = weakref.ref(self)
            except TypeError:  # a loader that cannot be weakly referenced: not tracked
                pass

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        iterator = self._iterator
        upcoming = next(iterator, _END)
        index = self.start
        while upcoming is not _END:
            current, upcoming = upcoming, next(iterator, _END)
            self.exhausted = upcoming is _END
            self.fetched = index + (1 if self.exhausted else 2)  # the upcoming one was read
            yield index, current
            index += 1
        self.exhausted = True


def running_pass(loader: Any) -> LookAheadPass | None:
    """The :class:`LookAheadPass` over ``loader`` that is running (built with
    ``loader=``), or None: what ``Hook.end_of_epoch`` asks for a loader without a length.

    Example::

        >>> loader = [10, 11]
        >>> running_pass(loader) is None
        True
    """
    try:
        ref = _RUNNING.get(loader)
    except TypeError:
        return None
    return ref() if ref is not None else None


def warn_inexact_resume(runner: Runner, loader: Any) -> None:
    """One warning per reason when a pass resumed in the middle cannot replay the interrupted
    one: a torch ``RandomSampler`` that draws its order from the global RNG (a DataLoader a
    hook assigned as it is, not through ``runner.build_dataloader``), or worker processes
    whose own random augmentations restart from the epoch's seed."""
    sampler = getattr(loader, "sampler", None)
    if type(sampler) is RandomSampler and sampler.generator is None:
        runner.logger.warning(
            "resumed in the middle of an epoch of a train DataLoader whose RandomSampler draws "
            "its order from the global RNG (assigned as it is, not built with "
            "runner.build_dataloader): the rest of this epoch runs in another order than the "
            "interrupted run's, so the resume is not exact; build the loader with "
            "runner.build_dataloader(...) to resume it exactly")
    if getattr(loader, "num_workers", 0) > 0:
        runner.logger.warning(
            "resumed in the middle of an epoch of a train DataLoader with num_workers=%d: the "
            "workers' own random augmentations restart from the epoch's seed, so the rest of "
            "this epoch is not augmented as in the interrupted run (the data order is)",
            loader.num_workers)
