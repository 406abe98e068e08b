"""Dataloaders built from configs, their lengths and passes, and batches moved to a device.

Data order is a function of (seed, epoch), so a resumed run skips what it did:
the loaders built here draw from :class:`~hookline.engine.samplers.EpochSampler`
(or MMEngine's samplers, :mod:`hookline.engine.samplers`), and
:func:`skip_batches` makes the next pass start after the batches already done,
without reading them.

Example::

    >>> from torch.utils.data import DataLoader
    >>> loader = DataLoader(range(10), batch_size=4)
    >>> loader_length(loader), move_to({"x": [1, 2]}, torch.device("cpu"))
    (3, {'x': [1, 2]})
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
)

from hookline.core import ConfigError

from . import distributed
from .collate import resolve_collate_fn
from .samplers import (
    EpochSampler,
    InfiniteSampler,
    check_sampler_config,
    sampler_type,
)

DATALOADER_KEYS = ("batch_size", "shuffle", "num_workers", "drop_last", "pin_memory",
                    "collate_fn", "persistent_workers", "prefetch_factor", "worker_init_fn",
                    "timeout")


def _with_sampler(dataset: Any, spec: Any, options: dict[str, Any], seed: int, rank: int,
                  world_size: int, pad: bool, name: str) -> DataLoader[Any]:
    """The DataLoader of a config with a ``sampler`` (checked: :func:`check_sampler_config`)."""
    generator = torch.Generator().manual_seed(seed)
    if isinstance(spec, Sampler):
        return DataLoader(dataset, sampler=spec, generator=generator, **options)
    kind = sampler_type(spec)
    shuffle = spec.get("shuffle", True)
    own_seed = seed if spec.get("seed") is None else spec["seed"]
    if kind == "DefaultSampler":  # MMEngine's order: randperm seeded seed + epoch
        return _wrap(dataset, shuffle, options, own_seed, rank, world_size,
                     pad and spec.get("round_up", True), torch_seeding=True)
    if not pad:
        raise ConfigError(f"{name}: an InfiniteSampler never ends a pass over the data, and "
                          "evaluation goes through its data once: give it sampler={'type': "
                          "'DefaultSampler', 'shuffle': False}, or no sampler")
    sampler = InfiniteSampler(dataset, shuffle=shuffle, seed=own_seed, rank=rank,
                              world_size=world_size)
    return DataLoader(dataset, sampler=sampler, generator=generator, **options)


def build_dataloader(spec: Any, *, seed: int, rank: int, world_size: int,
                     logger: logging.Logger, datasets_registry: Any = None,
                     name: str = "dataloader", shuffle_default: bool = True,
                     pad: bool = True) -> DataLoader[Any] | None:
    """Turn a DataLoader or a config dict into a DataLoader whose order hookline controls.

    A config dict holds ``dataset`` (a dataset or a ``{"type": ...}`` dict for
    the DATASETS registry) and DataLoader arguments such as ``batch_size`` and
    ``shuffle``, or, as MMEngine's, ``sampler``: ``{'type': 'InfiniteSampler',
    'shuffle': ..., 'seed': ...}`` (:class:`InfiniteSampler`), ``{'type':
    'DefaultSampler', ...}`` (an :class:`EpochSampler` drawing MMEngine's order) or a
    sampler object, kept as it is. A DataLoader with a random, sequential or distributed sampler
    is rebuilt around an :class:`EpochSampler` (only torch's own classes: a
    subclass is the user's; a ``DistributedSampler`` keeps its ``seed``, ``drop_last``
    and order); any other sampler is kept as it is (then resume replays the data
    order only if that sampler does).
    ``pad=False`` (evaluation loaders) shards without repeating samples.
    """
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        options = dict(spec)
        dataset = options.pop("dataset", None)
        if dataset is None:
            raise ConfigError(f"{name} config needs a 'dataset' entry, got keys {sorted(spec)}")
        if isinstance(dataset, Mapping):
            if datasets_registry is None:
                raise ConfigError(f"{name}: a dataset config needs the DATASETS registry")
            dataset = _sized(datasets_registry.build(dataset), dataset, name)
        sampler = options.pop("sampler", None)
        unknown = sorted(set(options) - set(DATALOADER_KEYS))
        if unknown:
            raise ConfigError(
                f"{name} got unknown option(s) {unknown}; accepted: dataset, sampler, "
                f"{', '.join(DATALOADER_KEYS)}"
            )
        if options.get("collate_fn") is not None:  # {'type': 'pseudo_collate'}: by name
            options["collate_fn"] = resolve_collate_fn(options["collate_fn"], name)
        if sampler is not None:
            check_sampler_config(sampler, name, shuffle_given="shuffle" in options)
            if isinstance(dataset, IterableDataset):
                raise ConfigError(f"{name}: a sampler with an IterableDataset "
                                  f"({type(dataset).__name__}), which yields its samples in "
                                  "its own order: drop sampler")
            built = _with_sampler(dataset, sampler, options, seed, rank, world_size, pad, name)
            if pad and world_size > 1:  # DefaultSampler(round_up=False), a sampler object
                _check_same_length(built, name)
            return built
        shuffle = options.pop("shuffle", shuffle_default)
        if isinstance(dataset, IterableDataset):
            if "shuffle" in spec and shuffle:
                raise ConfigError(f"{name}: shuffle=True with an IterableDataset "
                                  f"({type(dataset).__name__}), which yields its samples in its "
                                  "own order: drop shuffle (shuffle inside the dataset)")
            _warn_unsharded(dataset, name, world_size, logger)
            return DataLoader(dataset, generator=torch.Generator().manual_seed(seed), **options)
        return _wrap(dataset, shuffle, options, seed, rank, world_size, pad)
    if not isinstance(spec, DataLoader):
        raise ConfigError(f"{name} must be a torch DataLoader or a config dict, got {type(spec)}")
    loader = spec
    if isinstance(loader.dataset, IterableDataset):
        _warn_unsharded(loader.dataset, name, world_size, logger)
        return loader
    if loader.batch_sampler is None:
        return loader
    sampler = loader.sampler
    if type(loader) is not DataLoader:  # its own __iter__ or batches: the user's, as in MMEngine
        logger.warning("%s is a %s (a DataLoader subclass): kept as is; mid-epoch resume "
                       "replays the data order only if its sampler is deterministic%s", name,
                       type(loader).__name__,
                       ", and on several processes it must shard the data itself"
                       if world_size > 1 else "")
        if pad and world_size > 1:
            _check_same_length(loader, name)
        return loader
    batch_sampler = loader.batch_sampler
    if type(batch_sampler) is BatchSampler and isinstance(sampler, InfiniteSampler):
        return loader  # hookline's: its stream depends on its seed only (a resume is exact)
    if type(batch_sampler) is not BatchSampler or not _replaceable(sampler):
        custom = sampler if type(batch_sampler) is BatchSampler else batch_sampler
        logger.warning("%s has a custom sampler (%s): kept as is; mid-epoch resume replays the "
                       "data order only if that sampler is deterministic", name,
                       type(custom).__name__)
        if pad and world_size > 1:
            _check_same_length(loader, name)
        return loader
    shuffle = isinstance(sampler, RandomSampler) or bool(getattr(sampler, "shuffle", False))
    # the batch sampler's own size and drop_last: DataLoader(batch_sampler=...) has
    # batch_size None and drop_last False itself
    options = dict(batch_size=batch_sampler.batch_size, drop_last=batch_sampler.drop_last,
                   num_workers=loader.num_workers, collate_fn=loader.collate_fn,
                   pin_memory=loader.pin_memory, timeout=loader.timeout,
                   worker_init_fn=loader.worker_init_fn,
                   persistent_workers=loader.persistent_workers)
    if loader.num_workers > 0:
        options["prefetch_factor"] = loader.prefetch_factor
    if type(sampler) is DistributedSampler:  # the user's seed and drop_last: its very order
        return _wrap(loader.dataset, shuffle, options, sampler.seed, rank, world_size, pad,
                     drop_last=sampler.drop_last, torch_seeding=True)
    return _wrap(loader.dataset, shuffle, options, seed, rank, world_size, pad)


def _sized(dataset: Any, config: Mapping[str, Any], name: str) -> Any:
    """``dataset``, built from ``config``, checked to have a length (an IterableDataset need
    not): a ``TensorDataset`` config gives no tensors, and ``len()`` of it fails inside torch."""
    if isinstance(dataset, IterableDataset) or not hasattr(dataset, "__len__"):
        return dataset
    try:
        len(dataset)
    except (TypeError, IndexError, AttributeError) as exc:
        raise ConfigError(
            f"{name}: the dataset built from {dict(config)!r} has no length (len() failed: "
            f"{exc}); a TensorDataset needs its tensors, which a config file cannot give: "
            "register a dataset class that loads its data (DATASETS) and name it, or build "
            "the dataset in Python") from exc
    return dataset


def _check_same_length(loader: DataLoader[Any], name: str) -> None:
    """A kept training sampler must give every rank as many batches (each iteration's
    gradient all-reduce needs every rank): ConfigError naming the lengths otherwise."""
    lengths = distributed.all_gather_object(loader_length(loader))
    if len(set(lengths)) > 1:
        raise ConfigError(f"{name}'s sampler ({type(loader.sampler).__name__}) gives the ranks "
                          f"{lengths} batches per epoch; training on several processes needs as "
                          "many on every rank: pad its shards to one length (as "
                          "DistributedSampler does) or drop the remainder")


def _replaceable(sampler: Any) -> bool:
    """Whether ``sampler`` is one of torch's own order-only samplers (not a subclass, not a
    ``RandomSampler`` drawing with replacement or another number of samples)."""
    if type(sampler) is RandomSampler:
        return not sampler.replacement and sampler.num_samples == len(sampler.data_source)
    return type(sampler) in (SequentialSampler, DistributedSampler)


def _wrap(dataset: Any, shuffle: bool, options: dict[str, Any], seed: int, rank: int,
          world_size: int, pad: bool = True, *, drop_last: bool = False,
          torch_seeding: bool = False) -> DataLoader[Any]:
    batch_size = options.get("batch_size", 1)
    sampler = EpochSampler(dataset, shuffle=shuffle, seed=seed, batch_size=batch_size,
                           rank=rank, world_size=world_size, pad=pad, drop_last=drop_last,
                           torch_seeding=torch_seeding)
    # A private generator: the loader never draws from the global torch RNG,
    # whose state belongs to the model (dropout, init) and is checkpointed.
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(dataset, sampler=sampler, generator=generator, **options)


def _warn_unsharded(dataset: Any, name: str, world_size: int, logger: logging.Logger) -> None:
    if world_size > 1:
        logger.warning("%s: hookline does not shard an IterableDataset (%s) over the %d "
                       "processes: it must split its samples by rank itself and give every "
                       "rank as many batches", name, type(dataset).__name__, world_size)


def loader_length(loader: Any) -> int | None:
    """``len(loader)``, or None for a loader without a length (over an ``IterableDataset``
    without ``__len__``, or a plain iterable).

    Example::

        >>> loader_length(DataLoader(range(10), batch_size=4)), loader_length(iter([1, 2]))
        (3, None)
    """
    try:
        return len(loader)
    except TypeError:
        return None


def check_has_batches(loader: Any, name: str, *, training: bool) -> None:
    """One :class:`ConfigError` for a loader that gives nothing to run: an empty dataset, or
    (``training``) no batch at all (``drop_last`` with a batch larger than the dataset).
    An evaluation shard of one rank may be empty; the dataset may not.

        >>> check_has_batches(DataLoader(range(3), batch_size=4, drop_last=True), "train_dataloader",
        ...                   training=True)
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: train_dataloader gives no batches: its dataset has 3 ...
    """
    if loader is None:
        return
    dataset = getattr(loader, "dataset", None)
    samples = loader_length(dataset) if dataset is not None else None
    batches = loader_length(loader) if training else None
    if samples != 0 and batches != 0:
        return
    why = f"its dataset has {samples} samples" if samples is not None else "it is empty"
    batch_size = getattr(loader, "batch_size", None)
    if samples and getattr(loader, "drop_last", False) and batch_size:
        why += f", fewer than batch_size={batch_size}, and drop_last=True drops them"
    raise ConfigError(f"{name} gives no batches: {why}; give it a dataset with samples "
                      f"(or a smaller batch_size)")


def set_epoch(loader: DataLoader[Any] | None, epoch: int) -> None:
    """Tell ``loader``'s sampler (and worker seeding) which epoch starts; an
    ``IterableDataset`` with a ``set_epoch`` method (e.g. Hugging Face's) gets it too."""
    if loader is None:
        return
    dataset = getattr(loader, "dataset", None)
    dataset_set_epoch = getattr(dataset, "set_epoch", None)
    if isinstance(dataset, IterableDataset) and callable(dataset_set_epoch):
        dataset_set_epoch(epoch)
    for sampler in (getattr(loader, "sampler", None),
                    getattr(getattr(loader, "batch_sampler", None), "sampler", None)):
        if sampler is not None and hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
            break
    if loader.generator is not None:
        own_sampler = getattr(loader, "sampler", None)
        if isinstance(own_sampler, EpochSampler):
            loader.generator.manual_seed(own_sampler.seed * 100_003 + epoch + 1)


def ends_at_length(loader: Any) -> bool:
    """Whether every pass over ``loader`` is known to end after ``len(loader)`` batches: a
    DataLoader batching hookline's :class:`EpochSampler` or one of torch's own samplers. A
    pass over another sampler may go on past its ``len()`` (MMEngine's ``InfiniteSampler``).

    Example::

        >>> ends_at_length(DataLoader(range(10), batch_size=4))
        True
    """
    if not isinstance(loader, DataLoader) or isinstance(loader.dataset, IterableDataset):
        return False
    batch_sampler = loader.batch_sampler
    if batch_sampler is not None and type(batch_sampler) is not BatchSampler:
        return False
    sampler = loader.sampler
    return isinstance(sampler, EpochSampler) or type(sampler) in (
        RandomSampler, SequentialSampler, DistributedSampler)


def skip_batches(loader: DataLoader[Any], count: int) -> bool:
    """Make ``loader``'s next pass skip ``count`` batches without loading them."""
    sampler = getattr(loader, "sampler", None)
    if isinstance(sampler, EpochSampler):
        sampler.skip_batches(count)
        return True
    return False


def move_to(batch: Any, device: torch.device) -> Any:
    """``batch`` with every tensor moved to ``device`` (non-blocking), structure kept.

    Runs every iteration, so the usual shapes come first: a plain list or
    tuple, then a tensor (returned as is when it is already there).
    """
    cls = type(batch)
    if cls is tuple or cls is list:
        for value in batch:
            if type(value) is not torch.Tensor or value.device != device:
                return cls([move_to(v, device) for v in batch])
        return batch  # tensors already there (a CPU run, a loader that moved them): as is
    if isinstance(batch, torch.Tensor):
        return batch if batch.device == device else batch.to(device, non_blocking=True)
    if isinstance(batch, Mapping):
        moved = {k: move_to(v, device) for k, v in batch.items()}
        return moved if cls is dict else _same_mapping(batch, moved)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(move_to(v, device) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_to(v, device) for v in batch)
    if dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        # a collate_fn's dataclass: its fields moved, as Lightning's move_data_to_device does
        fields = {f.name: move_to(getattr(batch, f.name), device)
                  for f in dataclasses.fields(batch) if f.init}
        return dataclasses.replace(batch, **fields)
    return batch


def _same_mapping(batch: Mapping[Any, Any], moved: dict[Any, Any]) -> Any:
    """``moved`` in ``batch``'s own mapping type (OrderedDict, defaultdict with its default,
    a Mapping subclass taking a dict); a plain dict when that type cannot be rebuilt so."""
    kind: Any = type(batch)
    try:
        if isinstance(batch, collections.defaultdict):
            return kind(batch.default_factory, moved)
        return kind(moved)
    except Exception:  # a mapping type that does not take a dict
        return moved
