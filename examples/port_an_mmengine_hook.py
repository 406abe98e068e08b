"""Port an MMEngine hook to hookline by changing its import, then train with it.

Run: ``python examples/port_an_mmengine_hook.py [WORK_DIR]``

The hook below is written exactly as for MMEngine (same stage names, same
keyword arguments, ``every_n_train_iters``, ``priority``); only the import
line differs (``from mmengine.hooks import Hook`` ->
``from hookline.compat.mmengine.hooks import Hook``, the port rule of
docs/porting.md; ``hookline.Hook`` is the same class).
"""

from __future__ import annotations

import sys
import tempfile

import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.compat.mmengine.hooks import Hook


class GradNormWarning(Hook):
    """Warns when the loss jumps: an MMEngine-style hook, unchanged."""

    priority = "LOW"

    def __init__(self, interval: int = 20, factor: float = 3.0) -> None:
        self.interval = interval
        self.factor = factor
        self.best = None

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        if not self.every_n_train_iters(runner, self.interval):
            return
        loss = float(outputs["loss"])          # read only every `interval` iterations
        if self.best is not None and loss > self.factor * self.best:
            runner.logger.warning("loss jumped to %.3f at iteration %d", loss, runner.iter + 1)
        self.best = loss if self.best is None else min(self.best, loss)

    def state_dict(self):
        return {"best": self.best}              # survives resume

    def load_state_dict(self, state):
        self.best = state["best"]


def main(work_dir: str) -> dict:
    torch.manual_seed(0)
    x = torch.randn(512, 10)
    y = (x[:, :3].sum(1) > 0).long()
    data = TensorDataset(x, y)
    runner = Runner(
        torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2)),
        optimizer={"type": "SGD", "lr": 0.1, "momentum": 0.9},
        param_scheduler={"type": "StepLR", "step_size": 2, "gamma": 0.5},
        loss_fn=torch.nn.CrossEntropyLoss(),
        train_dataloader=DataLoader(data, batch_size=32, shuffle=True),
        val_dataloader=DataLoader(data, batch_size=128),
        metrics={"accuracy": "accuracy"},
        max_epochs=4,
        work_dir=work_dir,
        hooks=[GradNormWarning(interval=20)],
    )
    runner.on("after_val_epoch", lambda runner, metrics: print(
        f"epoch {runner.epoch}: accuracy {metrics['accuracy']:.3f}"))
    runner.train()
    return runner.val()


if __name__ == "__main__":
    metrics = main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
    assert metrics["accuracy"] > 0.9, metrics
