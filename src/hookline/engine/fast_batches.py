"""A DataLoader's batches built by indexing its dataset's tensors: the same batches, faster.

A ``DataLoader`` over an in-memory ``TensorDataset`` (``num_workers=0``, the
default ``collate_fn``) builds each batch as ``default_collate([dataset[i] for
i in indices])``: one ``__getitem__`` per sample, then one ``torch.stack`` per
tensor. Indexing each of the dataset's tensors with the batch's indices
(``tensor[indices]``) gives the same tensors, bit for bit, at a fraction of the
cost. :func:`iter_batches` does that where it is exact (and calls a dataset's
``__getitems__`` directly, as the DataLoader would), and iterates the loader
itself everywhere else; :func:`data_path` says which path a loader takes, and why.

What stays the DataLoader's: the indices come from the loader's own
``batch_sampler`` (same order, ``drop_last``, length, and hookline's sampler
skips the batches a resumed run did); the pass draws the same random number
the DataLoader's iterator draws when it starts (its ``_base_seed``), so every
random stream downstream stays identical; a batch is a ``list`` of contiguous
tensors, as ``default_collate`` makes of a sample tuple. ``pin_memory=True``
pins where the DataLoader would (and warns as it does on a machine without an
accelerator); a CUDA device also gets pinned batches, so that moving them with
``non_blocking=True`` overlaps.

Example::

    >>> import torch
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> data = TensorDataset(torch.arange(10.0), torch.arange(10))
    >>> loader = DataLoader(data, batch_size=4, shuffle=True)
    >>> data_path(loader).describe()
    'fast path (indexing a TensorDataset)'
    >>> _ = torch.manual_seed(0); fast = list(iter_batches(loader))
    >>> _ = torch.manual_seed(0); plain = list(loader)
    >>> [type(batch).__name__ for batch in fast] == [type(batch).__name__ for batch in plain]
    True
    >>> all(torch.equal(a, b) for x, y in zip(fast, plain) for a, b in zip(x, y))
    True
    >>> data_path(DataLoader(data, batch_size=4, num_workers=2)).describe()
    'DataLoader (num_workers=2)'
"""

from __future__ import annotations

import inspect
import itertools
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, Subset, TensorDataset, default_collate
from torch.utils.data._utils.collate import collate_tensor_fn, default_collate_fn_map

__all__ = ["DataPath", "data_path", "iter_batches", "iter_batches_after"]

#: the warning the DataLoader gives for ``pin_memory=True`` on a machine without an accelerator
NO_ACCELERATOR = ("'pin_memory' argument is set as true but no accelerator is found, then device "
                  "pinned memory won't be used.")


@dataclass(frozen=True)
class DataPath:
    """How a loader's batches are made.

    ``kind``: ``"tensors"`` (indexing a ``TensorDataset``'s tensors),
    ``"getitems"`` (``dataset.__getitems__`` then ``default_collate``, as the
    DataLoader does, without its iterator), ``"dataloader"`` (``iter(loader)``)
    or ``"iterable"`` (not a DataLoader: iterated as it is); ``reason``: what
    the run header says about it.
    """

    kind: str
    reason: str

    @property
    def fast(self) -> bool:
        return self.kind in ("tensors", "getitems")

    def describe(self) -> str:
        if self.fast:
            return f"fast path ({self.reason})"
        return f"DataLoader ({self.reason})" if self.kind == "dataloader" else self.reason


def data_path(loader: Any, *, enabled: bool = True, device: torch.device | None = None
              ) -> DataPath:
    """The path :func:`iter_batches` takes for ``loader`` (``enabled=False``: the
    Runner's ``fast_data=False``; ``device``: where the batches go).

    Example::

        >>> data_path([[1, 2]]).describe()
        'iterated as is (a list, not a DataLoader)'
    """
    if loader is None:
        return DataPath("iterable", "none")
    if not isinstance(loader, DataLoader):
        return DataPath("iterable", f"iterated as is (a {type(loader).__name__}, not a DataLoader)")
    if not enabled:
        return DataPath("dataloader", "fast_data=False")
    reason = _loader_reason(loader) or _dataset_reason(loader.dataset)
    if reason is not None:
        return DataPath("dataloader", reason)
    dataset = loader.dataset
    if type(dataset) is Subset or not getattr(dataset, "__getitems__", None):
        through = " through a Subset" if type(dataset) is Subset else ""
        return DataPath("tensors", f"indexing a {type(_source(dataset)).__name__}{through}")
    if _pins(loader, device) and loader.pin_memory:  # torch pins any batch structure: its way
        return DataPath("dataloader", f"pin_memory=True with {type(dataset).__name__}.__getitems__")
    return DataPath("getitems", f"{type(dataset).__name__}.__getitems__ without the DataLoader's "
                    "iterator")


def iter_batches(loader: Any, *, enabled: bool = True, device: torch.device | None = None
                 ) -> Iterator[Any]:
    """``iter(loader)``, or the same batches by the fast path (:func:`data_path`).

    Like ``iter(loader)``, it starts the pass at once (the sampler's iterator,
    the random draw); the batches come as they are read.
    """
    path = data_path(loader, enabled=enabled, device=device)
    fast = _fast_pass(loader, path, 0, device) if path.fast else None
    return iter(loader) if fast is None else fast[0]


def iter_batches_after(loader: Any, skip: int, *, enabled: bool = True,
                       device: torch.device | None = None) -> tuple[Iterator[Any], int] | None:
    """A pass over ``loader`` (as :func:`iter_batches` makes it) that starts after its first
    ``skip`` batches, and how many it moved past (fewer when the pass is shorter). The
    skipped batches' indices are drawn from the loader's batch sampler (its sampler, without
    batching), in the order and at the moment the DataLoader draws them, and nothing is
    loaded. None when a loader's batches cannot be skipped so: not a torch ``DataLoader``
    (a subclass included), or one over an ``IterableDataset``; such a pass is read instead.

    Example::

        >>> from torch.utils.data import DataLoader
        >>> iterator, skipped = iter_batches_after(DataLoader(list(range(10)), batch_size=4), 2)
        >>> [batch.tolist() for batch in iterator], skipped
        ([[8, 9]], 2)
    """
    path = data_path(loader, enabled=enabled, device=device)
    if path.fast:
        fast = _fast_pass(loader, path, skip, device)
        if fast is not None:
            return fast
    if type(loader) is not DataLoader or isinstance(loader.dataset, IterableDataset):
        return None
    batching = loader.batch_sampler is not None
    indices = _SkippedIndices(loader.batch_sampler if batching else loader.sampler, skip)
    iterator = iter(_one_pass_loader(loader, indices, batching))  # its random draw, as iter(loader)
    return iterator, indices.draw()


class _SkippedIndices:
    """A loader's batch sampler (or sampler) whose pass starts after its first ``skip``
    items: they are drawn, not loaded, as the pass asks for its first item (or when
    :meth:`draw` is called), so the sampler's own random draws come where the DataLoader
    makes them, after the pass's seed."""

    def __init__(self, sampler: Any, skip: int) -> None:
        self.sampler = sampler
        self.skip = skip
        self._iterator: Iterator[Any] | None = None
        self._skipped: int | None = None

    def __iter__(self) -> Iterator[Any]:
        if self._iterator is None:
            self._iterator = iter(self.sampler)
        return self

    def __next__(self) -> Any:
        self.draw()
        assert self._iterator is not None
        return next(self._iterator)

    def draw(self) -> int:
        """Skip the first items of the pass (once); how many there were."""
        if self._skipped is None:
            if self._iterator is None:
                self._iterator = iter(self.sampler)
            self._skipped = sum(1 for _ in itertools.islice(self._iterator, self.skip))
        return self._skipped

    def __len__(self) -> int:
        return max(len(self.sampler) - self.skip, 0)


def _one_pass_loader(loader: DataLoader[Any], indices: _SkippedIndices, batching: bool
                     ) -> DataLoader[Any]:
    """A DataLoader like ``loader`` (its dataset, workers, collate_fn, generator ...) whose
    one pass draws its indices from ``indices``; its workers end with that pass."""
    options: dict[str, Any] = {
        "num_workers": loader.num_workers, "collate_fn": loader.collate_fn,
        "pin_memory": loader.pin_memory, "timeout": loader.timeout,
        "worker_init_fn": loader.worker_init_fn, "generator": loader.generator,
        "multiprocessing_context": loader.multiprocessing_context,
        "pin_memory_device": loader.pin_memory_device}
    if loader.num_workers > 0:
        options["prefetch_factor"] = loader.prefetch_factor
    if "in_order" in _LOADER_PARAMETERS:
        options["in_order"] = getattr(loader, "in_order", True)
    if batching:
        return DataLoader(loader.dataset, batch_sampler=indices, **options)
    return DataLoader(loader.dataset, batch_size=None, sampler=indices, **options)


_LOADER_PARAMETERS = frozenset(inspect.signature(DataLoader.__init__).parameters)


def _fast_pass(loader: Any, path: DataPath, skip: int, device: torch.device | None
               ) -> tuple[Iterator[Any], int] | None:
    """The fast path's pass after ``skip`` batches (their indices drawn, not loaded), and
    how many it moved past; None when the DataLoader's iterator must make the batches."""
    dataset = loader.dataset
    index_map: torch.Tensor | None = None
    if type(dataset) is Subset:
        index_map = _index_tensor(dataset.indices)
        if index_map is None:  # indices that are not integers: the DataLoader's way
            return None
    pin = _pins(loader, device)
    if loader.pin_memory and _accelerator() is None:
        warnings.warn(NO_ACCELERATOR, stacklevel=3)
    # what the DataLoader's iterator does when it starts, in this order
    indices = iter(loader.batch_sampler)
    torch.empty((), dtype=torch.int64).random_(generator=loader.generator)
    skipped = sum(1 for _ in itertools.islice(indices, skip)) if skip > 0 else 0
    if path.kind == "getitems":
        return _collated(indices, dataset), skipped
    return _indexed(indices, dataset, _source(dataset).tensors, index_map, pin), skipped


# -- the passes ------------------------------------------------------------------------------
def _collated(indices: Iterator[Any], dataset: Any) -> Iterator[Any]:
    for batch in indices:
        yield default_collate(dataset.__getitems__(batch))


def _indexed(indices: Iterator[Any], dataset: Any, tensors: tuple[torch.Tensor, ...],
             index_map: torch.Tensor | None, pin: bool) -> Iterator[Any]:
    select = torch.index_select  # contiguous output, as torch.stack makes it
    for batch in indices:
        index = _index_tensor(batch)
        batch_out: Any = None
        if index is not None:
            try:
                if index_map is not None:
                    index = select(index_map, 0, index)
                batch_out = [_take_pinned(t, index) if pin else select(t, 0, index)
                             for t in tensors]
            except IndexError:  # a negative or out-of-range index: the DataLoader's way below
                batch_out = None
        yield default_collate(_fetch(dataset, batch)) if batch_out is None else batch_out


def _index_tensor(batch: Any) -> torch.Tensor | None:
    """A batch of sample indices as a 1-D int64 tensor; None for anything else (bools,
    floats, nested lists), which then goes the DataLoader's way."""
    try:
        array = np.asarray(batch)
    except (TypeError, ValueError, RuntimeError):
        return None
    if array.ndim != 1 or array.dtype.kind != "i":
        return None
    return torch.from_numpy(array if array.dtype == np.int64 else array.astype(np.int64))


def _take_pinned(tensor: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``tensor[index]`` written straight into pinned memory (one copy, not two)."""
    out = torch.empty((len(index), *tensor.shape[1:]), dtype=tensor.dtype, pin_memory=True)
    return torch.index_select(tensor, 0, index, out=out)


def _source(dataset: Any) -> Any:
    """The ``TensorDataset`` the fast path indexes (the one under a ``Subset``)."""
    return dataset.dataset if type(dataset) is Subset else dataset


def _fetch(dataset: Any, batch: Any) -> list[Any]:
    """torch's ``_MapDatasetFetcher.fetch`` for a batch of indices, before collating."""
    if getattr(dataset, "__getitems__", None):
        return list(dataset.__getitems__(batch))
    return [dataset[i] for i in batch]


# -- when the fast path is exact ---------------------------------------------------------------
def _pins(loader: DataLoader[Any], device: torch.device | None) -> bool:
    """Whether batches go to pinned memory: where the DataLoader pins, and for a CUDA device."""
    wanted = loader.pin_memory or (device is not None and device.type == "cuda")
    return wanted and _accelerator() is not None


def _accelerator() -> str | None:
    """The accelerator the DataLoader pins memory for (``torch.accelerator``, torch >= 2.6)."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None:  # older torch: the DataLoader pins for CUDA
        return "cuda" if torch.cuda.is_available() else None
    current = accelerator.current_accelerator() if accelerator.is_available() else None
    return None if current is None else str(current.type)


def _loader_reason(loader: DataLoader[Any]) -> str | None:
    """Why ``loader`` itself needs its own iterator, or None."""
    cls = type(loader)
    for name in ("__iter__", "_get_iterator"):
        if getattr(cls, name) is not getattr(DataLoader, name):
            return f"{cls.__name__} has its own {name}"
    if loader.num_workers > 0:
        return f"num_workers={loader.num_workers}"
    if loader.batch_sampler is None:
        return "batch_size=None: no batching"
    if loader.collate_fn is not default_collate:
        return "a custom collate_fn"
    if default_collate_fn_map.get(torch.Tensor) is not collate_tensor_fn or any(
            isinstance((), key) for key in default_collate_fn_map):
        return "default_collate_fn_map was changed"
    if loader.timeout:
        return f"timeout={loader.timeout}"
    if loader.pin_memory and loader.pin_memory_device:
        return "pin_memory_device is set"
    if loader.pin_memory and _accelerator() == "mps":
        return "pin_memory=True on MPS"
    return None


def _dataset_reason(dataset: Any) -> str | None:
    """Why ``dataset`` needs the DataLoader's per-sample path, or None."""
    name = type(dataset).__name__
    if isinstance(dataset, IterableDataset):
        return f"{name} is an IterableDataset"
    if type(dataset) is Subset:  # torch's own Subset over a TensorDataset: index it through
        if not _plain_tensors(dataset.dataset):
            return f"a Subset of {type(dataset.dataset).__name__}"
        return _on_cpu(dataset.dataset)
    if getattr(dataset, "__getitems__", None):
        return None
    if isinstance(dataset, TensorDataset):
        if not _plain_tensors(dataset):
            return f"{name} changes how a TensorDataset indexes"
        return _on_cpu(dataset)
    return f"{name} has no __getitems__"


def _on_cpu(dataset: Any) -> str | None:
    """None when every tensor is in CPU memory (where an index is checked on the host)."""
    devices = sorted({str(t.device) for t in dataset.tensors if t.device.type != "cpu"})
    return f"tensors on {', '.join(devices)}" if devices else None


def _plain_tensors(dataset: Any) -> bool:
    """A ``TensorDataset`` whose samples are ``tuple(t[i] for t in tensors)`` of plain tensors."""
    if not isinstance(dataset, TensorDataset) or getattr(dataset, "__getitems__", None):
        return False
    if type(dataset).__getitem__ is not TensorDataset.__getitem__:
        return False
    return all(type(t) is torch.Tensor and t.layout == torch.strided and not t.is_nested
               and not t.is_quantized for t in dataset.tensors)
