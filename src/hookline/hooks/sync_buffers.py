"""SyncBuffersHook: average buffers (BatchNorm running statistics) over ranks before evaluating.

Each rank's BatchNorm layers see only that rank's shard of the data, so
their running mean and variance drift apart. This hook replaces every
floating-point buffer by its mean over all processes.

Example::

    >>> import torch
    >>> from hookline.hooks import SyncBuffersHook
    >>> from hookline.hooks.sync_buffers import sync_buffers
    >>> sync_buffers(torch.nn.BatchNorm1d(4))   # one process: nothing to average
    0
    >>> SyncBuffersHook().triggered_stages()
    ['before_train', 'after_train_epoch', 'before_val_epoch', 'before_test_epoch']
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist

from hookline.engine import distributed
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


def sync_buffers(module: torch.nn.Module) -> int:
    """Replace each floating-point buffer of ``module`` by its mean over all ranks.

    Buffers are flattened into one tensor per (device, dtype), so the cost is
    one all-reduce per group. Integer buffers (``num_batches_tracked``) are
    left alone: every rank counts the same batches. Returns the number of
    buffers averaged (0 on a single process).
    """
    world = distributed.get_world_size()
    if world <= 1:
        return 0
    groups: dict[tuple, list[torch.Tensor]] = defaultdict(list)
    for buffer in module.buffers():
        if buffer.is_floating_point() or buffer.is_complex():
            groups[(buffer.device, buffer.dtype)].append(buffer)
    with torch.no_grad():
        for buffers in groups.values():
            flat = torch.cat([b.detach().reshape(-1) for b in buffers])
            dist.all_reduce(flat, op=dist.ReduceOp.SUM)
            flat /= world
            offset = 0
            for buffer in buffers:
                count = buffer.numel()
                buffer.copy_(flat[offset:offset + count].view_as(buffer))
                offset += count
    return sum(len(b) for b in groups.values())


@HOOKS.register()
class SyncBuffersHook(Hook):
    """Averages the model's floating-point buffers over ranks (a no-op on one process).

    When: before every validation and test epoch, so every rank evaluates
    the same model; and, in epoch-based training, also after each training
    epoch, before :class:`CheckpointHook` (VERY_LOW) writes the epoch
    checkpoint, so that checkpoint holds the averaged statistics too. A
    validation right after an already synchronised epoch does not
    all-reduce again. (MMEngine syncs after each training epoch only.)
    Iteration checkpoints of iteration-based runs hold rank 0's buffers.

    Example::

        runner = Runner(model_with_batchnorm, ..., hooks=[SyncBuffersHook()])
        # under torchrun: every rank validates with the same running statistics
    """

    priority = "NORMAL"

    def __init__(self) -> None:
        self._synced_at: int | None = None  # runner.iter of the last sync
        #: how many times buffers were averaged
        self.syncs = 0

    def _sync(self, runner: Runner) -> None:
        if distributed.get_world_size() <= 1:
            return
        if self._synced_at == runner.iter:  # no training since the last sync
            return
        sync_buffers(runner.model)
        self._synced_at = runner.iter
        self.syncs += 1

    def before_train(self, runner: Runner) -> None:
        self._synced_at = None

    def after_train_epoch(self, runner: Runner) -> None:
        if runner.by_epoch:
            self._sync(runner)

    def before_val_epoch(self, runner: Runner) -> None:
        self._sync(runner)

    def before_test_epoch(self, runner: Runner) -> None:
        self._sync(runner)
