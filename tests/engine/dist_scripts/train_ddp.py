"""Train a small model with the hookline Runner; run alone or under ``torchrun``.

Used by tests/engine/test_distributed.py. Writes, into ``--out``:

* ``weights_rank{R}.pt``: the final state_dict of this rank's model;
* ``result_rank{R}.json``: rank, world size, finished iterations and the
  validation metrics of every validation pass;

and gives each rank its own work_dir, ``--out/work_rank{R}``, so that a test
can see which rank wrote log.txt, metrics.jsonl and checkpoints. ``--slow``
sleeps in every iteration (so that a signal can arrive mid-run) and writes
the process id into ``started_rank{R}`` once the first iteration ran.

To check the barrier after a save, rank 0 of a world of two or more sleeps
before writing each checkpoint, and every rank records, after the CheckpointHook's epoch save,
whether rank 0's file of that epoch already exists.

Several runs, each with its own arguments (its own ``--out`` among them), can be
given one after another, separated by ``--then``: they train in turn in the same
processes (under torchrun, in the same process group), so that the tests pay for
starting the processes once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner


def make_data(size: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(size, 8, generator=generator)
    targets = (inputs[:, 0] + 0.5 * inputs[:, 1] > 0).long() + (inputs[:, 2] > 1).long()
    return TensorDataset(inputs, targets)


def make_model() -> torch.nn.Module:
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


class Record(Hook):
    """Keeps every validation result and whether rank 0's checkpoints were there in time."""

    priority = "LOWEST"  # after the CheckpointHook (VERY_LOW)

    def __init__(self, out: Path, slow: float) -> None:
        self.out = out
        self.slow = slow
        self.val_metrics: list[dict] = []
        self.saved_before_barrier: list[bool] = []
        self.grad_sync: list[bool] = []

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self.grad_sync.append(runner.ddp_model is None or runner.optim_wrapper.should_sync())

    def before_save_checkpoint(self, runner, checkpoint) -> None:
        if runner.rank == 0 and runner.world_size > 1:
            time.sleep(0.2)  # without the barrier, rank 1 would look before the file exists

    def after_val(self, runner) -> None:
        # the CheckpointHook writes an epoch's checkpoint after the validation that follows it
        path = self.out / "work_rank0" / f"epoch_{runner.epoch}.pth"
        self.saved_before_barrier.append(path.is_file())

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if self.slow:
            if runner.iter == 0:
                started = self.out / f"started_rank{runner.rank}"
                started.with_suffix(".tmp").write_text(str(os.getpid()))
                started.with_suffix(".tmp").replace(started)  # appears with its content
            time.sleep(self.slow)

    def after_val_epoch(self, runner, metrics=None) -> None:
        self.val_metrics.append(dict(metrics or {}))


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--batch", type=int, required=True, help="per-process batch size")
    parser.add_argument("--train-size", type=int, default=96)
    parser.add_argument("--val-size", type=int, default=37)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--accumulate", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="cpu (gloo) or cuda (nccl)")
    parser.add_argument("--resume", default=None, help="the Runner's resume argument")
    parser.add_argument("--signal-sync-interval", type=int, default=1)
    parser.add_argument("--torchmetrics", action="store_true",
                        help="also compute accuracy with a torchmetrics Metric")
    return parser


def main(argv: list[str] | None = None) -> None:
    """Train each run of ``argv`` (runs separated by ``--then``) in turn."""
    runs: list[list[str]] = [[]]
    for arg in sys.argv[1:] if argv is None else argv:
        if arg == "--then":
            runs.append([])
        else:
            runs[-1].append(arg)
    parser = make_parser()
    for run in runs:
        train(parser.parse_args(run))


def train(args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    rank = int(os.environ.get("RANK", "0"))
    args.out.mkdir(parents=True, exist_ok=True)
    record = Record(args.out, args.slow)
    metrics = {"accuracy": "accuracy"}
    if args.torchmetrics:
        from torchmetrics.classification import (  # noqa: PLC0415  (optional dependency)
            MulticlassAccuracy,
        )

        metrics["tm_accuracy"] = MulticlassAccuracy(num_classes=3, average="micro")
    runner = Runner(
        make_model(), optimizer={"type": "SGD", "lr": args.lr},
        loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=args.epochs,
        train_dataloader=DataLoader(make_data(args.train_size, 0), batch_size=args.batch,
                                    shuffle=True),
        val_dataloader=DataLoader(make_data(args.val_size, 1), batch_size=5),
        metrics=metrics,
        work_dir=args.out / f"work_rank{rank}", seed=7, device=args.device, hooks=[record],
        resume=args.resume, signal_sync_interval=args.signal_sync_interval,
        default_hooks={"logger": {"type": "LoggerHook", "interval": 2},
                       "optimizer": {"type": "OptimizerHook", "accumulate": args.accumulate}},
    )
    try:
        runner.train()
    finally:
        torch.save({k: v.detach().cpu().clone() for k, v in runner.model.state_dict().items()},
                   args.out / f"weights_rank{rank}.pt")
        result = {"rank": runner.rank, "world_size": runner.world_size, "iter": runner.iter,
                  "device": str(next(runner.model.parameters()).device),
                  "val": record.val_metrics,
                  "saved_before_barrier": record.saved_before_barrier,
                  "grad_sync": record.grad_sync,
                  "log_record": runner.message_hub.info.get("log_record")}
        (args.out / f"result_rank{rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
