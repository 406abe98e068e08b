"""The samplers hookline builds: :class:`EpochSampler` (a resumable drop-in for torch's), and
MMEngine's :class:`InfiniteSampler` for iteration-based runs, with the checks of a dataloader
config's ``sampler``.

Example::

    >>> from hookline.engine.samplers import EpochSampler
    >>> sampler = EpochSampler(range(6), shuffle=True, seed=0, batch_size=2)
    >>> sampler.set_epoch(1); full = list(sampler)
    >>> sampler.skip_batches(2); list(sampler) == full[4:]
    True
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch.utils.data import Sampler

from hookline.core import ConfigError

from . import distributed

__all__ = ["SAMPLER_OPTIONS", "EpochSampler", "InfiniteSampler", "check_epochs_end",
           "check_sampler_config", "sampler_type"]


class EpochSampler(Sampler[int]):
    """Indices in an order fixed by ``(seed, epoch)``, sharded over ``world_size`` ranks.

    Rank ``r`` takes every ``world_size``-th index of the order, starting at
    ``r``. With ``pad=True`` (training) the order is padded with its first
    indices, like ``DistributedSampler``, so that every rank runs as many
    iterations; with ``pad=False`` (evaluation) no sample is repeated and the
    ranks' shards differ in length by at most one, so that metrics gathered
    over ranks count every sample exactly once.
    """

    def __init__(self, dataset: Any, *, shuffle: bool, seed: int = 0, batch_size: int = 1,
                 rank: int = 0, world_size: int = 1, pad: bool = True,
                 drop_last: bool = False, torch_seeding: bool = False) -> None:
        self.size = len(dataset)
        self.shuffle = shuffle
        self.seed = seed
        self.batch_size = batch_size
        self.rank = rank
        self.world_size = world_size
        self.pad = pad
        #: cut the order to a multiple of ``world_size`` instead of padding it
        #: (``DistributedSampler(drop_last=True)``)
        self.drop_last = drop_last
        #: the permutation ``DistributedSampler`` draws (seeded ``seed + epoch``)
        self.torch_seeding = torch_seeding
        self.epoch = 0
        self._skip = 0
        if drop_last:
            self.per_rank = self.size // world_size
        elif pad:
            self.per_rank = math.ceil(self.size / world_size)
        else:
            self.per_rank = len(range(rank, self.size, world_size))

    def set_epoch(self, epoch: int) -> None:
        """Choose the permutation of this epoch."""
        self.epoch = epoch

    def skip_batches(self, count: int) -> None:
        """Make the next pass start after ``count`` batches (one pass only)."""
        self._skip = count * self.batch_size

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            seed = self.seed + self.epoch if self.torch_seeding else \
                self.seed * 100_003 + self.epoch
            generator = torch.Generator().manual_seed(seed)
            order = torch.randperm(self.size, generator=generator).tolist()
        else:
            order = list(range(self.size))
        total = self.per_rank * self.world_size if self.pad or self.drop_last else self.size
        while total > len(order):  # pad like DistributedSampler so every rank gets as many
            order += order[: total - len(order)]
        mine = order[self.rank:total:self.world_size]
        skip, self._skip = self._skip, 0
        return iter(mine[skip:])

    def __len__(self) -> int:
        return self.per_rank


class InfiniteSampler(Sampler[int]):
    """MMEngine's ``InfiniteSampler(dataset, shuffle=True, seed=None)``, for iteration-based
    runs (mmseg's configs): indices without end, one round of the dataset after another (a
    new permutation each round with ``shuffle``, drawn from one generator seeded ``seed``),
    every ``world_size``-th index of that stream from ``rank`` on, as MMEngine's. ``len()``
    is the dataset's size, so ``len(DataLoader)`` is one round's batches, while a pass over
    the loader never ends: an iteration-based run makes one pass, and a resumed run starts
    it again after the batches it did (their indices drawn, nothing loaded), exactly.

    Unlike MMEngine's, each ``iter()`` starts the stream from its beginning (MMEngine's goes
    on where the previous iterator stopped; a run iterates it once, so the batches are the
    same). ``seed=None`` is 0 (the Runner's seed for ``sampler={'type': 'InfiniteSampler'}``
    in a dataloader config); MMEngine draws a random one. ``set_epoch`` changes nothing.
    Not for epoch-based runs (an epoch would never end) nor evaluation loaders.

    Example::

        >>> from itertools import islice
        >>> list(islice(InfiniteSampler(range(3), shuffle=False), 7))
        [0, 1, 2, 0, 1, 2, 0]
        >>> list(islice(InfiniteSampler(range(3), shuffle=False, rank=1, world_size=2), 4))
        [1, 0, 2, 1]
    """

    def __init__(self, dataset: Any, shuffle: bool = True, seed: int | None = None, *,
                 rank: int | None = None, world_size: int | None = None) -> None:
        self.size = len(dataset)
        self.shuffle = bool(shuffle)
        self.seed = 0 if seed is None else int(seed)
        self.rank = distributed.get_rank() if rank is None else rank
        self.world_size = distributed.get_world_size() if world_size is None else world_size

    def _rounds(self) -> Iterator[int]:
        if self.size == 0:
            return
        generator = torch.Generator().manual_seed(self.seed)
        while True:
            if self.shuffle:
                yield from torch.randperm(self.size, generator=generator).tolist()
            else:
                yield from range(self.size)

    def __iter__(self) -> Iterator[int]:
        return itertools.islice(self._rounds(), self.rank, None, self.world_size)

    def __len__(self) -> int:
        return self.size

    def set_epoch(self, epoch: int) -> None:
        """Nothing: the stream does not depend on the epoch (as MMEngine's)."""


#: the samplers a dataloader config builds from ``sampler={'type': ...}`` (MMEngine's
#: names) -> the options each takes
SAMPLER_OPTIONS = {"InfiniteSampler": ("shuffle", "seed"),
                   "DefaultSampler": ("shuffle", "seed", "round_up")}


def sampler_type(spec: Mapping[str, Any]) -> Any:
    kind = spec.get("type")
    return kind.rsplit(".", 1)[-1] if isinstance(kind, str) and kind.startswith("mmengine.") \
        else kind


def check_sampler_config(spec: Any, where: str, *, shuffle_given: bool = False) -> None:
    """A dataloader config's ``sampler``: MMEngine's ``{'type': 'InfiniteSampler' or
    'DefaultSampler', 'shuffle': ..., 'seed': ...}`` (``round_up`` too for DefaultSampler),
    or a torch ``Sampler``; anything else is a :class:`ConfigError` saying what to pass.

    Example::

        >>> check_sampler_config({"type": "RandomSampler"}, "train_dataloader")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: train_dataloader.sampler: a config builds MMEngine's ...
    """
    if shuffle_given:
        raise ConfigError(f"{where}: give shuffle inside sampler ({{'type': ..., 'shuffle': "
                          "True}), not beside it (as MMEngine's dataloader configs do)")
    if isinstance(spec, Sampler):
        return
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}.sampler must be a config such as {{'type': "
                          f"'InfiniteSampler', 'shuffle': True, 'seed': 0}} or a torch Sampler, "
                          f"got {ConfigError.brief(spec)}")
    kind = sampler_type(spec)
    if kind not in SAMPLER_OPTIONS:
        raise ConfigError(
            f"{where}.sampler: a config builds MMEngine's InfiniteSampler or DefaultSampler "
            f"(type: 'InfiniteSampler' / 'DefaultSampler', with shuffle and seed), got type "
            f"{spec.get('type')!r}; for another sampler pass the sampler object itself "
            "(sampler=MySampler(dataset)) or a DataLoader built with it")
    for key in spec:
        if key != "type" and key not in SAMPLER_OPTIONS[kind]:
            raise ConfigError(f"{where}.sampler: "
                              f"{ConfigError.unknown(f'{kind} option', key, SAMPLER_OPTIONS[kind])}")
    for flag in ("shuffle", "round_up"):
        if flag in spec and not isinstance(spec[flag], bool):
            raise ConfigError(f"{where}.sampler.{flag} must be True or False, got {spec[flag]!r}")
    seed = spec.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise ConfigError(f"{where}.sampler.seed must be an int >= 0 or None (the Runner's "
                          f"seed), got {seed!r}")


def check_epochs_end(loader: Any, name: str = "train_dataloader") -> None:
    """An epoch-based run needs passes over ``loader`` that end: refuse an
    :class:`InfiniteSampler` (MMEngine's, for iteration-based runs), whose pass never ends.

    Example::

        >>> from torch.utils.data import DataLoader
        >>> check_epochs_end(DataLoader(range(4), sampler=InfiniteSampler(range(4))))
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: train_dataloader: its InfiniteSampler never ends an ...
    """
    batch_sampler = getattr(loader, "batch_sampler", None)
    samplers = (getattr(loader, "sampler", None), getattr(batch_sampler, "sampler", None))
    if any(isinstance(sampler, InfiniteSampler) for sampler in samplers):
        raise ConfigError(f"{name}: its InfiniteSampler never ends an epoch, so a max_epochs "
                          "run would never finish its first one; train by max_iters (e.g. "
                          "max_iters=10000, val_interval=1000), as MMEngine's iteration-based "
                          "runs with InfiniteSampler do, or use a DefaultSampler / shuffle=True "
                          "for epochs")
