"""``mmengine.dist``: rank queries and collectives over ``torch.distributed``.

On one process every collective returns its input unchanged (as in MMEngine).
The Runner initialises the process group itself (``torchrun``), so there is
no ``init_dist`` here.

Example::

    >>> import torch
    >>> from hookline.compat.mmengine import dist
    >>> dist.get_dist_info(), dist.is_main_process(), dist.is_distributed()
    ((0, 1), True, False)
    >>> dist.all_reduce(torch.tensor([1.0, 2.0]), op="mean")
    tensor([1., 2.])
    >>> dist.collect_results([3, 4], size=2)
    [3, 4]
"""

from __future__ import annotations

import functools
import os
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import torch
import torch.distributed as torch_dist

from hookline.core import ConfigError

_F = TypeVar("_F", bound=Callable[..., Any])
_OPS = {"sum": "SUM", "product": "PRODUCT", "min": "MIN", "max": "MAX", "band": "BAND",
        "bor": "BOR", "bxor": "BXOR"}


def is_distributed() -> bool:
    """Whether a process group is initialised (the Runner does it under ``torchrun``)."""
    return torch_dist.is_available() and torch_dist.is_initialized()


def get_default_group() -> Any:
    return torch_dist.group.WORLD if is_distributed() else None


def get_backend(group: Any = None) -> str | None:
    return str(torch_dist.get_backend(group)) if is_distributed() else None


def get_world_size(group: Any = None) -> int:
    return torch_dist.get_world_size(group) if is_distributed() else 1


def get_rank(group: Any = None) -> int:
    return torch_dist.get_rank(group) if is_distributed() else 0


def get_local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", "0"))


def get_local_size() -> int:
    return int(os.environ.get("LOCAL_WORLD_SIZE", "1"))


def get_dist_info(group: Any = None) -> tuple[int, int]:
    """``(rank, world_size)``."""
    return get_rank(group), get_world_size(group)


def is_main_process(group: Any = None) -> bool:
    return get_rank(group) == 0


def master_only(func: _F) -> _F:
    """Run ``func`` on rank 0 only (other ranks get None)."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs) if is_main_process() else None
    return wrapper  # type: ignore[return-value]


def barrier(group: Any = None) -> None:
    if is_distributed():
        torch_dist.barrier(group)


def get_comm_device(group: Any = None) -> torch.device:
    """Where tensors for collectives live: the current GPU under nccl, else the CPU."""
    if get_backend(group) == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def get_data_device(data: Any) -> torch.device:
    """The device of a tensor, or of the tensors in a (nested) sequence or mapping."""
    if isinstance(data, torch.Tensor):
        return data.device
    items = data.values() if isinstance(data, Mapping) else data
    devices = {get_data_device(item) for item in items}
    if len(devices) != 1:
        raise ValueError(f"data lives on {len(devices)} devices: {devices}")
    return devices.pop()


def _reduce(tensor: torch.Tensor, op: str, group: Any) -> None:
    """All-reduce ``tensor`` in place; ``mean`` divides the sum (integers round down)."""
    name = op.lower()
    if name not in _OPS and name != "mean":
        raise ConfigError(f"unknown reduce op {op!r}; accepted: mean, {', '.join(_OPS)}")
    device = get_comm_device(group)
    work = tensor.to(device) if tensor.device != device else tensor
    torch_dist.all_reduce(work, getattr(torch_dist.ReduceOp, _OPS.get(name, "SUM")), group)
    if name == "mean":
        size = get_world_size(group)
        if work.is_floating_point() or work.is_complex():
            work.div_(size)
        else:
            work.div_(size, rounding_mode="floor")
    if work is not tensor:
        tensor.copy_(work)


def all_reduce(data: torch.Tensor, op: str = "sum", group: Any = None) -> torch.Tensor:
    """Reduce ``data`` over all ranks in place (``sum``, ``mean``, ``min``, ``max`` ...)."""
    if get_world_size(group) > 1:
        _reduce(data, op, group)
    return data


def all_reduce_dict(data: dict[str, torch.Tensor], op: str = "sum", group: Any = None) -> None:
    """Reduce every tensor of ``data`` (one flat all-reduce; entries are replaced)."""
    if not isinstance(data, dict):
        raise ConfigError(f"all_reduce_dict needs a dict of tensors, got {type(data).__name__}")
    if get_world_size(group) <= 1 or not data:
        return
    keys = sorted(data)
    flat = torch.cat([data[k].reshape(-1) for k in keys])
    _reduce(flat, op, group)
    for key, part in zip(keys, torch.split(flat, [data[k].numel() for k in keys])):
        data[key] = part.reshape(data[key].shape)


def all_reduce_params(params: Iterable[torch.Tensor], coalesce: bool = True,
                      bucket_size_mb: int = -1, op: str = "sum", group: Any = None) -> None:
    """Reduce parameters or buffers in place, one flat all-reduce per dtype when ``coalesce``."""
    if get_world_size(group) <= 1:
        return
    tensors = [p.data for p in params]
    if not coalesce:
        for tensor in tensors:
            _reduce(tensor, op, group)
        return
    by_kind: dict[tuple[torch.dtype, torch.device], list[torch.Tensor]] = {}
    for tensor in tensors:
        by_kind.setdefault((tensor.dtype, tensor.device), []).append(tensor)
    for group_tensors in by_kind.values():
        flat = torch.cat([t.reshape(-1) for t in group_tensors])
        _reduce(flat, op, group)
        for tensor, part in zip(group_tensors, torch.split(flat, [t.numel() for t in group_tensors])):
            tensor.copy_(part.view_as(tensor))


def all_gather(data: torch.Tensor, group: Any = None) -> list[torch.Tensor]:
    """``[data of rank 0, data of rank 1, ...]`` (same shapes on every rank)."""
    size = get_world_size(group)
    if size <= 1:
        return [data]
    out = [torch.empty_like(data) for _ in range(size)]
    torch_dist.all_gather(out, data, group)
    return out


def all_gather_object(data: Any, group: Any = None) -> list[Any]:
    """Every rank's picklable ``data``, in rank order."""
    if get_world_size(group) <= 1:
        return [data]
    out: list[Any] = [None] * get_world_size(group)
    torch_dist.all_gather_object(out, data, group)
    return out


def broadcast(data: torch.Tensor, src: int = 0, group: Any = None) -> torch.Tensor:
    """Rank ``src``'s ``data`` on every rank (in place)."""
    if get_world_size(group) > 1:
        torch_dist.broadcast(data, src, group)
    return data


def broadcast_object_list(data: list[Any], src: int = 0, group: Any = None) -> None:
    """Replace the items of ``data`` on every rank by rank ``src``'s (in place)."""
    if get_world_size(group) > 1:
        torch_dist.broadcast_object_list(data, src, group)


def sync_random_seed(group: Any = None) -> int:
    """A random seed drawn on rank 0 and shared by every rank."""
    seed = [random.randint(0, 2**31 - 1)]
    broadcast_object_list(seed, 0, group)
    return int(seed[0])


def collect_results(results: list[Any], size: int, device: str = "cpu",
                    tmpdir: str | None = None) -> list[Any] | None:
    """Every rank's ``results`` on rank 0, interleaved as a ``DistributedSampler`` shards
    (rank 0's first item, rank 1's first item, ...) and cut to ``size``; None elsewhere.
    ``device`` and ``tmpdir`` are accepted; objects travel through ``all_gather_object``."""
    if device not in ("cpu", "gpu", "npu"):
        raise ConfigError(f"device must be 'cpu', 'gpu' or 'npu', got {device!r}")
    parts = all_gather_object(list(results))
    if get_rank() != 0:
        return None
    ordered: list[Any] = []
    for k in range(max(len(part) for part in parts)):  # shards may differ by one item
        ordered.extend(part[k] for part in parts if k < len(part))
    return ordered[:size]


collect_results_cpu = collect_results
collect_results_gpu = collect_results
gather_object = all_gather_object

__all__ = [
    "all_gather", "all_gather_object", "all_reduce", "all_reduce_dict", "all_reduce_params",
    "barrier", "broadcast", "broadcast_object_list", "collect_results", "collect_results_cpu",
    "collect_results_gpu", "gather_object", "get_backend", "get_comm_device", "get_data_device",
    "get_default_group", "get_dist_info", "get_local_rank", "get_local_size", "get_rank",
    "get_world_size", "is_distributed", "is_main_process", "master_only", "sync_random_seed",
]
