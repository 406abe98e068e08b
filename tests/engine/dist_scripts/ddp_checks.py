"""Run under ``torchrun --nproc_per_node 2``: the Runner's construction-time checks of a
two-rank run. ``CASE`` (argv[1]) is ``uneven`` (a DefaultSampler with round_up=False over 21
samples: rank 0 gets 6 batches of 2, rank 1 5), ``frozen`` (a layer frozen when the Runner
wraps the model in DDP) or ``unfreeze`` (that layer unfrozen by a hook as epoch 2 begins: each
rank trains and saves ``rank<r>.pt``). Each rank writes ``rank<r>.txt`` in argv[2]: ``error: <message>`` or
``built``; the Runner's log goes to the work dir."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
from torch.utils.data import TensorDataset

from hookline import ConfigError, Runner

case, out = sys.argv[1], Path(sys.argv[2])
rank = int(os.environ["RANK"])
torch.manual_seed(0)
data = TensorDataset(torch.randn(21, 4), torch.randint(0, 2, (21,)))
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
loader: dict = {"dataset": data, "batch_size": 2}
if case == "uneven":
    loader["sampler"] = {"type": "DefaultSampler", "shuffle": False, "round_up": False}
else:
    model[0].requires_grad_(False)
if case == "unfreeze":  # frozen for epoch 1, unfrozen by a hook as epoch 2 begins
    from hookline import Hook

    class Unfreeze(Hook):
        def before_train_epoch(self, runner) -> None:
            if runner.epoch == 1:
                runner.model[0].requires_grad_(True)

    if rank == 0:
        torch.save(model.state_dict(), out / "initial.pt")
    runner = Runner(model=model, work_dir=out / "work", train_dataloader=loader,
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=3, hooks=[Unfreeze()],
                    optimizer={"type": "SGD", "lr": 0.1}, default_hooks={"progress": None})
    runner.train()
    torch.save(runner.model.state_dict(), out / f"rank{rank}.pt")
    runner.close()
    sys.exit(0)
try:
    runner = Runner(model=model, work_dir=out / "work", train_dataloader=loader,
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1,
                    optimizer={"type": "SGD", "lr": 0.1})
    runner.close()
    (out / f"rank{rank}.txt").write_text("built")
except ConfigError as exc:
    (out / f"rank{rank}.txt").write_text(f"error: {exc}")
