"""SyncBuffersHook with two real gloo processes (torch.multiprocessing spawn, file store)."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import hookline.hooks.sync_buffers
from hookline import Hook
from hookline.engine.checkpoint import load_checkpoint_file
from hookline.hooks import SyncBuffersHook
from hookline.hooks.sync_buffers import sync_buffers

from ..gloo_abort import spawn_twice_on_abort
from ._toy import make_runner, one_thread  # noqa: F401  (autouse fixture)

needs_gloo = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="torch.distributed with gloo is not available")


def buffers_of(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: b.detach().clone() for name, b in module.named_buffers()}


class Record(Hook):
    """Keeps the model's buffers at the end of each training epoch (before SyncBuffersHook,
    priority HIGHEST) and at the first batch of each validation (after it)."""

    priority = "HIGHEST"

    def __init__(self) -> None:
        self.before: list[dict] = []
        self.during_val: list[dict] = []

    def after_train_epoch(self, runner) -> None:
        self.before.append(buffers_of(runner.model))

    def before_val_iter(self, runner, batch_idx, data_batch=None) -> None:
        if batch_idx == 0:
            self.during_val.append(buffers_of(runner.model))


def _worker(rank: int, world: int, store: str, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        # a plain model whose BatchNorm statistics differ per rank
        bn = torch.nn.BatchNorm1d(3)
        bn.running_mean.fill_(rank + 1.0)
        bn.running_var.copy_(torch.tensor([1.0, 2.0, 3.0]) * (rank + 1))
        bn.num_batches_tracked.fill_(10 + rank)
        plain = {"count": sync_buffers(bn), **buffers_of(bn)}

        # a real DDP training run: each rank's BatchNorm sees its own shard
        record, hook = Record(), SyncBuffersHook()
        runner = make_runner(Path(out) / "work", hooks=[record, hook], max_epochs=2,
                             checkpoint={"type": "CheckpointHook"})
        assert runner.world_size == world
        runner.train()
        torch.save({"plain": plain, "before": record.before, "during_val": record.during_val,
                    "syncs": hook.syncs, "final": buffers_of(runner.model)},
                   Path(out) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_docstring_examples():
    assert doctest.testmod(hookline.hooks.sync_buffers).failed == 0


def test_single_process_is_a_no_op(tmp_path):
    hook = SyncBuffersHook()
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=1)
    runner.train()
    assert hook.syncs == 0


@needs_gloo
@pytest.mark.timeout(120)
def test_two_ranks_end_with_the_mean_of_their_buffers(tmp_path):
    spawn_twice_on_abort(lambda attempt: mp.spawn(
        _worker, args=(2, str(tmp_path / f"store{attempt}"), str(tmp_path)), nprocs=2, join=True))
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in (0, 1))

    # the plain BatchNorm: floating buffers are the mean, the batch counter is left alone
    assert r0["plain"]["count"] == r1["plain"]["count"] == 2
    for rank in (r0, r1):
        assert torch.equal(rank["plain"]["running_mean"], torch.full((3,), 1.5))
        assert torch.equal(rank["plain"]["running_var"], torch.tensor([1.5, 3.0, 4.5]))
    assert (int(r0["plain"]["num_batches_tracked"]), int(r1["plain"]["num_batches_tracked"])) \
        == (10, 11)

    # training: after each epoch the ranks' statistics differ until the hook averages them
    assert r0["syncs"] == r1["syncs"] == 2  # once per epoch; validation right after: no repeat
    for epoch in range(2):
        before0, before1 = r0["before"][epoch], r1["before"][epoch]
        assert not torch.equal(before0["body.1.running_mean"], before1["body.1.running_mean"])
        for name in ("body.1.running_mean", "body.1.running_var"):
            mean = (before0[name] + before1[name]) / 2
            assert torch.allclose(r0["during_val"][epoch][name], mean, rtol=1e-6, atol=1e-7)
            assert torch.equal(r0["during_val"][epoch][name], r1["during_val"][epoch][name])
    assert all(torch.equal(r0["final"][k], r1["final"][k]) for k in r0["final"])

    # the epoch checkpoint (written after the hook) holds the averaged statistics
    checkpoint = load_checkpoint_file(tmp_path / "work" / "epoch_2.pth")
    for name in ("body.1.running_mean", "body.1.running_var"):
        assert torch.equal(checkpoint["state_dict"][name], r0["final"][name])
