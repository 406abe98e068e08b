"""Multi-process helpers for runs launched by ``torchrun``.

On one process everything here is a cheap no-op, so the Runner calls it
unconditionally.

Example::

    >>> from hookline.engine import distributed as dist_utils
    >>> dist_utils.get_rank(), dist_utils.get_world_size(), dist_utils.is_main_process()
    (0, 1, True)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
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


def interleave(parts: Sequence[Sequence[Any]]) -> list[Any]:
    """The items of every rank's shard back in the order they were sharded from.

    Evaluation shards are strided (rank ``r`` holds ``order[r::world]``, see
    :class:`~hookline.engine.samplers.EpochSampler`), so item ``k`` of rank ``r``
    was item ``k * world + r``; shards may differ in length (no padding).

    Example::

        >>> interleave([[0, 2, 4], [1, 3]])
        [0, 1, 2, 3, 4]
    """
    longest = max((len(part) for part in parts), default=0)
    return [part[k] for k in range(longest) for part in parts if k < len(part)]


def all_gather_interleave(tensor: torch.Tensor) -> torch.Tensor:
    """Every rank's ``tensor`` (shapes may differ in dim 0), rows interleaved as
    :func:`interleave` orders items: the order of the strided shards' source."""
    world = get_world_size()
    if world <= 1:
        return tensor
    size = torch.tensor([tensor.shape[0]], device=tensor.device)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size)
    lengths = torch.cat(sizes)
    longest = int(lengths.max().item())
    padded = torch.zeros((longest, *tensor.shape[1:]), dtype=tensor.dtype, device=tensor.device)
    padded[: tensor.shape[0]] = tensor
    gathered = [torch.zeros_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded)
    rows = torch.stack(gathered, dim=1).reshape(longest * world, *tensor.shape[1:])
    position = torch.arange(longest, device=tensor.device)
    valid = (position.unsqueeze(1) < lengths.unsqueeze(0)).reshape(-1)  # row k*world + r
    return rows[valid]


def unwrap_model(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside ``DistributedDataParallel`` / ``DataParallel`` wrappers (MMEngine's
    ``MMDistributedDataParallel`` too); any other module as it is.

    Example::

        >>> net = torch.nn.Linear(2, 2)
        >>> unwrap_model(torch.nn.DataParallel(net)) is net
        True
    """
    wrappers = (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)
    while isinstance(model, wrappers):
        model = model.module
    return model


def wrap_ddp(model: torch.nn.Module, device: torch.device, **ddp_kwargs: Any) -> torch.nn.Module:
    """Wrap ``model`` in DistributedDataParallel when more than one process runs
    (``ddp_kwargs``: e.g. ``find_unused_parameters``, ``broadcast_buffers``)."""
    if get_world_size() <= 1 or not any(p.requires_grad for p in model.parameters()):
        return model
    device_ids = [device.index] if device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids, **ddp_kwargs)


def warn_frozen_under_ddp(ddp_model: Any, model: torch.nn.Module,
                          logger: logging.Logger) -> None:
    """One warning (rank 0) when ``ddp_model`` is a DistributedDataParallel built while some
    parameters of ``model`` (named as the user's model names them) were frozen: DDP
    synchronises only the parameters that required a gradient when it was built. The Runner
    builds it again when that changes in a ``before_train`` / ``before_train_epoch`` hook;
    a parameter unfrozen inside an epoch trains apart on every rank until the next one."""
    if not isinstance(ddp_model, torch.nn.parallel.DistributedDataParallel):
        return
    frozen = [name for name, p in model.named_parameters() if not p.requires_grad]
    if frozen and get_rank() == 0:
        shown = ", ".join(frozen[:3]) + (f" and {len(frozen) - 3} more" if len(frozen) > 3 else "")
        logger.warning(
            "%d parameter(s) are frozen (requires_grad=False) while DistributedDataParallel "
            "wraps the model: %s. DDP synchronises only the parameters that need a gradient "
            "when it is built; the Runner builds it again when a before_train or "
            "before_train_epoch hook unfreezes them, but one unfrozen inside an epoch trains "
            "apart on each rank until the next epoch: unfreeze at an epoch's start", len(frozen),
            shown)


def _by_dtype(tensors: Iterable[torch.Tensor]) -> dict[tuple[torch.dtype, torch.device],
                                                        list[torch.Tensor]]:
    groups: dict[tuple[torch.dtype, torch.device], list[torch.Tensor]] = {}
    for tensor in tensors:
        groups.setdefault((tensor.dtype, tensor.device), []).append(tensor)
    return groups


def broadcast_tensors(tensors: Iterable[torch.Tensor], src: int = 0) -> None:
    """Copy rank ``src``'s values into ``tensors`` on every rank, in place: one broadcast of
    a flat buffer per dtype (DDP's start-up and per-forward buffer broadcast)."""
    if get_world_size() <= 1:
        return
    with torch.no_grad():
        for group in _by_dtype(tensors).values():
            flat = torch.cat([t.detach().reshape(-1) for t in group])
            dist.broadcast(flat, src)
            for tensor, part in zip(group, torch.split(flat, [t.numel() for t in group])):
                tensor.copy_(part.view_as(tensor))


def average_gradients(params: Iterable[torch.Tensor]) -> None:
    """Average the ``.grad`` of ``params`` over the ranks, in place, as DDP does.

    One all-reduce of a flat buffer per dtype, which also counts the ranks holding a
    gradient for each parameter: a parameter no rank gave a gradient keeps None, one that
    only some ranks did gets the sum over ranks / world size (the others count as zero).
    """
    world = get_world_size()
    if world <= 1:
        return
    params = [p for p in params if p.requires_grad]
    groups: dict[tuple[torch.dtype, torch.device], list[torch.Tensor]] = {}
    for param in params:
        grad = param.grad
        if grad is not None and grad.is_sparse:
            raise RuntimeError("averaging sparse gradients over ranks is not supported: "
                               "train the model through DistributedDataParallel (no own "
                               "train_step) or use dense gradients")
        groups.setdefault((param.dtype, param.device), []).append(param)
    with torch.no_grad():
        for (dtype, device), group in groups.items():
            present = [p.grad is not None for p in group]
            flat = torch.cat([p.grad.reshape(-1) if p.grad is not None
                              else torch.zeros(p.numel(), dtype=dtype, device=device)
                              for p in group]
                             + [torch.tensor(present, dtype=dtype, device=device)])
            dist.all_reduce(flat, op=dist.ReduceOp.SUM)
            flat.div_(world)
            counts = flat[-len(group):]
            parts = torch.split(flat[:-len(group)], [p.numel() for p in group])
            for param, part, count in zip(group, parts, counts.tolist()):
                if count == 0:
                    continue
                if param.grad is None:
                    param.grad = part.view_as(param).clone()
                else:
                    param.grad.copy_(part.view_as(param.grad))
