"""Distributed cases beyond the plain ``loss_fn`` model; run alone or under ``torchrun``.

Used by tests/engine/test_distributed.py. ``--batch`` is the per-process batch
size: one process with twice the batch of each of two ranks sees the same
samples per step. Writes, into ``--out``:

* ``weights_<case>_rank{R}.pt``: the final state_dict of that case's model;
* ``result_rank{R}.json``: what each case recorded on this rank.

Cases: ``base_model`` (hookline.compat.mmengine's BaseModel, its unmodified
``train_step``; its validation returns data samples), ``gan`` (an own
``train_step`` stepping two optimizers with ``update_params``, one with
clipping), ``raw`` (an own ``train_step`` that calls ``loss.backward()`` and
``optimizer.step()`` itself), ``batch_norm`` (an own ``train_step`` on a model
with buffers), ``prewrapped`` (a model given already wrapped in
MMDistributedDataParallel), ``unused`` (a parameter the loss never uses, with
``find_unused_parameters`` / ``model_wrapper_cfg``), ``samplers`` (a subclass of
DistributedSampler, and a DistributedSampler with its own seed and drop_last),
``val_order`` (the order metrics get predictions in).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from train_ddp import make_data

from hookline import Hook, Runner
from hookline.compat.mmengine.model import BaseModel, MMDistributedDataParallel

OPTIONS: dict[str, Any] = dict(seed=7, default_hooks={"checkpoint": None, "logger": None})


def head(seed: int = 1234) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


class MMNet(BaseModel):
    """MMEngine's contract: ``forward(inputs, data_samples, mode)``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = head()

    def forward(self, inputs, data_samples=None, mode="tensor"):
        out = self.fc(inputs)
        if mode == "loss":
            return {"loss": torch.nn.functional.cross_entropy(out, data_samples)}
        if mode == "predict":
            return [{"index": int(t)} for t in data_samples]
        return out


def as_dict(batch):
    inputs, targets = zip(*batch)
    return {"inputs": torch.stack(inputs), "data_samples": torch.stack(targets)}


class Gan(torch.nn.Module):
    """Two optimizers stepped by its own train_step (``optim_wrapper`` is a dict)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(5)
        self.gen = torch.nn.Linear(8, 8)
        self.disc = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                        torch.nn.Linear(16, 1))

    def train_step(self, data, optim_wrapper):
        inputs, targets = data
        fake = self.gen(inputs).detach()
        d_loss = (self.disc(inputs).squeeze(1) - targets.float()).pow(2).mean() \
            + self.disc(fake).pow(2).mean()
        optim_wrapper["disc"].update_params(d_loss)
        g_loss = (self.disc(self.gen(inputs)) - 1).pow(2).mean()
        optim_wrapper["gen"].update_params(g_loss)
        return {"d_loss": d_loss.detach(), "g_loss": g_loss.detach()}


class Raw(torch.nn.Module):
    """An own train_step that bypasses the wrapper's step."""

    def __init__(self, norm: bool = False) -> None:
        super().__init__()
        torch.manual_seed(9)
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16),
                                       torch.nn.BatchNorm1d(16) if norm else torch.nn.Identity(),
                                       torch.nn.Tanh(), torch.nn.Linear(16, 3))
        self.raw = not norm
        #: the buffers as each step found them (after the Runner's broadcast, if any)
        self.step_buffers: list[torch.Tensor] = []

    def train_step(self, data, optim_wrapper):
        inputs, targets = data
        self.step_buffers.extend(b.detach().clone().float() for b in self.buffers())
        loss = torch.nn.functional.cross_entropy(self.net(inputs), targets)
        if self.raw:
            loss.backward()
            optim_wrapper.optimizer.step()
            optim_wrapper.optimizer.zero_grad()
        else:
            optim_wrapper.update_params(loss)
        return {"loss": loss.detach()}


class WithUnused(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.body = torch.nn.Linear(8, 3)
        self.aux = torch.nn.Linear(8, 3)  # used only outside training

    def forward(self, inputs):
        return self.body(inputs)


def squared(preds, targets):
    return preds.pow(2).mean()


class SeenTargets(Hook):
    """The targets (here: sample indices) of every training batch, per epoch."""

    def __init__(self) -> None:
        self.seen: list[list[int]] = []

    def before_train_epoch(self, runner) -> None:
        self.seen.append([])

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        self.seen[-1].extend(int(i) for i in data_batch[1])


class Reversed(DistributedSampler):
    """A user's sampler: DistributedSampler's shard, backwards (as many on every rank)."""

    def __iter__(self):
        return iter(list(super().__iter__())[::-1])


def save(out: Path, case: str, model: torch.nn.Module, rank: int) -> None:
    torch.save({k: v.detach().clone() for k, v in model.state_dict().items()},
               out / f"weights_{case}_rank{rank}.pt")


def train_cases(args: argparse.Namespace, rank: int, result: dict[str, Any]) -> None:
    """base_model, gan, raw and batch_norm: the weights are saved for the test to compare."""
    train = make_data(48, 0)
    runner = Runner(MMNet(), optim_wrapper={"optimizer": {"type": "SGD", "lr": 0.2}},
                    train_dataloader=DataLoader(train, batch_size=args.batch, shuffle=True,
                                                collate_fn=as_dict),
                    max_epochs=2, work_dir=args.out / "base_model", **OPTIONS)
    runner.train()
    result["base_model_wrapper"] = type(runner.ddp_model).__name__
    save(args.out, "base_model", runner.model, rank)

    sgd = {"type": "SGD", "lr": 0.1, "momentum": 0.9}
    runner = Runner(Gan(), optim_wrapper={
        "gen": {"optimizer": sgd, "clip_grad": {"max_norm": 0.05}},
        "disc": {"optimizer": sgd}},
        train_dataloader=DataLoader(train, batch_size=args.batch, shuffle=True),
        max_epochs=2, work_dir=args.out / "gan", **OPTIONS)
    runner.train()
    save(args.out, "gan", runner.model, rank)

    for case, norm in (("raw", False), ("batch_norm", True)):
        runner = Runner(Raw(norm), optimizer={"type": "SGD", "lr": 0.1},
                        train_dataloader=DataLoader(train, batch_size=args.batch, shuffle=True),
                        max_epochs=2, work_dir=args.out / case, **OPTIONS)
        if norm:  # rank-dependent running stats before training: rank 0's go everywhere
            runner.model.net[1].running_mean.fill_(float(rank))
        runner.train()
        save(args.out, case, runner.model, rank)
        torch.save(runner.model.step_buffers, args.out / f"step_buffers_{case}_rank{rank}.pt")


def multi_process_cases(args: argparse.Namespace, rank: int, result: dict[str, Any]) -> None:
    """prewrapped, unused, samplers and val_order (meaningful on several processes)."""
    train = make_data(48, 0)
    bare = head()
    runner = Runner(MMDistributedDataParallel(bare), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1,
                    train_dataloader=DataLoader(train, batch_size=args.batch),
                    work_dir=args.out / "prewrapped", seed=7,
                    default_hooks={"logger": None})
    runner.train()
    checkpoint = args.out / "prewrapped" / "epoch_1.pth"
    result["prewrapped"] = {
        "model_is_bare": runner.model is bare,
        "wrapped_once": isinstance(runner.ddp_model, torch.nn.parallel.DistributedDataParallel)
        and not isinstance(runner.ddp_model.module.module, torch.nn.parallel.DistributedDataParallel),
        "checkpoint_keys": sorted(torch.load(checkpoint, weights_only=True)["state_dict"])
        if rank == 0 else None}
    save(args.out, "prewrapped", runner.model, rank)

    unused = {}
    for name, extra in (("find_unused_parameters", {"find_unused_parameters": True}),
                        ("model_wrapper_cfg", {"model_wrapper_cfg": {
                            "type": "MMDistributedDataParallel", "find_unused_parameters": True,
                            "broadcast_buffers": False}})):
        runner = Runner(WithUnused(), optimizer={"type": "SGD", "lr": 0.1},
                        loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1,
                        train_dataloader=DataLoader(train, batch_size=args.batch),
                        work_dir=args.out / "unused", **extra, **OPTIONS)
        runner.train()
        unused[name] = {"iter": runner.iter,
                        "find_unused": runner.ddp_model.find_unused_parameters,
                        "broadcast_buffers": runner.ddp_model.broadcast_buffers}
    result["unused"] = unused

    indexed = TensorDataset(torch.randn(51, 8, generator=torch.Generator().manual_seed(2)),
                            torch.arange(51))
    samplers: dict[str, Any] = {}
    for name, sampler in (("subclass", Reversed(indexed, shuffle=True, seed=4)),
                          ("exact", DistributedSampler(indexed, shuffle=True, seed=123,
                                                       drop_last=True))):
        expected = []
        for epoch in range(2):
            sampler.set_epoch(epoch)
            expected.append(list(map(int, sampler)))
        seen = SeenTargets()
        runner = Runner(head(), optimizer={"type": "SGD", "lr": 0.0}, loss_fn=squared,
                        train_dataloader=DataLoader(indexed, batch_size=5, sampler=sampler),
                        max_epochs=2, work_dir=args.out / "samplers", hooks=[seen], **OPTIONS)
        runner.train()
        samplers[name] = {"expected": expected, "seen": seen.seen,
                          "kind": type(runner.train_loop.dataloader.sampler).__name__}
    result["samplers"] = samplers

    def order_of_samples(samples):
        return {"samples_in_order": float([s["index"] for s in samples] == list(range(23)))}

    def order_of_targets(preds, targets):
        return float(targets.tolist() == list(range(23)))

    val = TensorDataset(torch.randn(23, 8), torch.arange(23))
    runner = Runner(MMNet(), val_dataloader=DataLoader(val, batch_size=3, collate_fn=as_dict),
                    metrics={"order": order_of_samples}, work_dir=args.out / "val", **OPTIONS)
    result["val_samples"] = runner.val()
    runner = Runner(head(), val_dataloader=DataLoader(val, batch_size=3),
                    metrics={"targets_in_order": order_of_targets},
                    work_dir=args.out / "val", **OPTIONS)
    result["val_tensors"] = runner.val()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--batch", type=int, required=True, help="per-process batch size")
    args = parser.parse_args()
    torch.set_num_threads(1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")  # the Runners find it up and leave it to this script
    rank = int(os.environ.get("RANK", "0"))
    args.out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"world_size": world}
    try:
        train_cases(args, rank, result)
        if world > 1:
            multi_process_cases(args, rank, result)
        (args.out / f"result_rank{rank}.json").write_text(json.dumps(result))
    finally:
        if world > 1:
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
