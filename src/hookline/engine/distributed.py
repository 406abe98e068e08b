"""Multi-process helpers for runs launched by ``torchrun``.

On one process everything here is a cheap no-op, so the Runner calls it
unconditionally.

Example::

    >>> from hookline.engine import distributed as dist_utils
    >>> dist_utils.get_rank(), dist_utils.get_world_size(), dist_utils.is_main_process()
    (0, 1, True)
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist


def get_rank() -> int:
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def get_world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def is_main_process() -> bool:
    return get_rank() == 0


def launched_world_size() -> int:
    """WORLD_SIZE as set by torchrun (1 when not launched)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def init_from_env(device: str = "auto") -> bool:
    """Initialise the default process group from torchrun's environment.

    nccl when CUDA is used, gloo otherwise. Returns True when this call
    initialised it (and the caller should destroy it at the end).
    """
    if launched_world_size() <= 1 or not dist.is_available() or dist.is_initialized():
        return False
    use_cuda = torch.cuda.is_available() and device in ("auto", "cuda")
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return True


def control_group() -> Any:
    """A gloo group for CPU-side control messages (stop flags) that never touches the GPU."""
    if get_world_size() <= 1:
        return None
    if dist.get_backend() == "gloo":
        return dist.group.WORLD
    return dist.new_group(backend="gloo")


def any_rank(flag: bool, group: Any) -> bool:
    """True on every rank when ``flag`` is true on any rank (a CPU all-reduce)."""
    if group is None:
        return flag
    value = torch.tensor([1 if flag else 0], dtype=torch.int32)
    dist.all_reduce(value, op=dist.ReduceOp.MAX, group=group)
    return bool(value.item())


def destroy() -> None:
    """Tear down the default process group, if one is up (at exit, for groups we created)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    if get_world_size() > 1:
        dist.barrier()


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    if get_world_size() > 1:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def collective_device() -> torch.device:
    """Where tensors for collectives live: the current GPU under nccl, else the CPU."""
    if get_world_size() > 1 and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_gather_object(obj: Any) -> list[Any]:
    """``[obj of rank 0, obj of rank 1, ...]`` for a small picklable ``obj`` (``[obj]`` alone)."""
    world = get_world_size()
    if world <= 1:
        return [obj]
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, obj)
    return gathered


def all_gather_cat(tensor: torch.Tensor) -> torch.Tensor:
    """Concatenate ``tensor`` from every rank along dim 0 (shapes may differ in dim 0)."""
    world = get_world_size()
    if world <= 1:
        return tensor
    size = torch.tensor([tensor.shape[0]], device=tensor.device)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size)
    longest = int(max(s.item() for s in sizes))
    padded = torch.zeros((longest, *tensor.shape[1:]), dtype=tensor.dtype, device=tensor.device)
    padded[: tensor.shape[0]] = tensor
    gathered = [torch.zeros_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded)
    return torch.cat([g[: int(s.item())] for g, s in zip(gathered, sizes)])


def wrap_ddp(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """Wrap ``model`` in DistributedDataParallel when more than one process runs."""
    if get_world_size() <= 1 or not any(p.requires_grad for p in model.parameters()):
        return model
    device_ids = [device.index] if device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
