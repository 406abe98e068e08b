"""Two ranks (``torchrun --nproc_per_node 2``) running ported hooks that talk between ranks.

Used by tests/compat/test_distributed.py. Trains a model with a BatchNorm
layer on each rank's shard, so the running statistics differ by rank, with
toypose's ``SyncNormHook`` (an mmpose-style ``before_val_epoch`` all-reduce
through ``hookline.compat.mmengine.dist``); records the statistics before
and after it, and the results of the compat collectives, into
``--out/result_rank{R}.json``; and, at the very end of the exit handlers (after
hookline's, which destroys the process group), how many threads the process still
has, into ``--out/threads_rank{R}.txt`` (Linux).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "projects"))

from hookline import Hook, Runner
from hookline.compat.mmcv.runner import allreduce_params
from hookline.compat.mmengine import dist


class Snapshot(Hook):
    """The BatchNorm statistics at ``before_val_epoch``, before (HIGHEST) or after (LOWEST)
    the other hooks of that stage."""

    def __init__(self, priority: str, into: dict, key: str) -> None:
        self.priority, self.into, self.key = priority, into, key

    def before_val_epoch(self, runner) -> None:
        bn = runner.model[1]
        self.into[self.key] = {"mean": bn.running_mean.tolist(), "var": bn.running_var.tolist()}


def count_threads(path: Path) -> None:
    """Registered before the Runner exists, so it runs after hookline's exit handler."""
    if os.path.isdir("/proc/self/task"):
        path.write_text(str(len(os.listdir("/proc/self/task"))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    out = Path(parser.parse_args().out)
    atexit.register(count_threads, out / f"threads_rank{os.environ.get('RANK', '0')}.txt")
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(32, 4, generator=generator) * torch.arange(1.0, 5.0)
    data = TensorDataset(x, (x[:, 0] > 0).long())
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4),
                                torch.nn.Linear(4, 2))
    record: dict = {}
    runner = Runner(model, optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1,
                    train_dataloader=DataLoader(data, batch_size=4, shuffle=True),
                    val_dataloader=DataLoader(data, batch_size=8), device="cpu",
                    work_dir=out / f"work_rank{dist.get_rank()}",
                    hooks=[{"type": "toypose.SyncNormHook"},
                           Snapshot("HIGHEST", record, "before"), Snapshot("LOWEST", record, "after")],
                    default_hooks={"logger": None, "progress": None, "checkpoint": None})
    runner.train()
    rank, world = dist.get_dist_info()
    value = torch.tensor([float(rank + 1)])
    record["mean"] = dist.all_reduce(value.clone(), op="mean").item()
    record["max"] = dist.all_reduce(value.clone(), op="max").item()
    record["gathered"] = dist.all_gather_object({"rank": rank})
    record["collected"] = dist.collect_results([f"r{rank}a", f"r{rank}b"], size=3)
    record["broadcast"] = dist.broadcast(value.clone(), src=1).item()
    params = [torch.nn.Parameter(torch.full((2,), float(rank)))]
    allreduce_params(params)
    record["allreduce_params"] = params[0].tolist()
    record["world"] = world
    (out / f"result_rank{rank}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main()
