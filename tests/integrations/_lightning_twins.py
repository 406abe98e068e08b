"""The same tiny classifier trained twice: by ``lightning.Trainer.fit`` on CPU and by a hookline
Runner, from the same initial weights on the same data in the same order with plain SGD, so that
Lightning callbacks can be compared in both.

The Lightning module logs ``loss`` per training step and ``val_loss`` / ``val_accuracy`` per
validation epoch: the names a hookline run gives its step outputs and validation metrics in
``trainer.callback_metrics``.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner

pl = pytest.importorskip("lightning.pytorch")

BATCH = 24


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="lightning")
        warnings.filterwarnings("ignore", message=".*(does not have many workers|LeafSpec).*")
        yield
    torch.set_num_threads(before)


def data(noise: float = 0.8, seed: int = 0) -> tuple[TensorDataset, TensorDataset]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 4, generator=generator)
    y = (x[:, 0] + 0.5 * x[:, 1] + noise * torch.randn(64, generator=generator) > 0).long()
    xv = torch.randn(30, 4, generator=generator)
    yv = (xv[:, 0] + noise * torch.randn(30, generator=generator) > 0).long()
    return TensorDataset(x, y), TensorDataset(xv, yv)


def initial_net(seed: int = 0) -> torch.nn.Linear:
    torch.manual_seed(seed)
    return torch.nn.Linear(4, 2)


class TwinModule(pl.LightningModule):
    def __init__(self, net: torch.nn.Module, lr: float, step_lr: int | None = None) -> None:
        super().__init__()
        self.net, self.lr, self.step_lr = net, lr, step_lr

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        self.log("val_loss", torch.nn.functional.cross_entropy(logits, y))
        self.log("val_accuracy", (logits.argmax(1) == y).float().mean())

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr)
        if self.step_lr is None:
            return optimizer
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, self.step_lr, 0.5)]


class Run:
    def __init__(self, callbacks: list[Any], net: torch.nn.Module, epochs_done: int,
                 runner: Runner | None = None, trainer: Any = None) -> None:
        self.callbacks, self.net, self.epochs_done = callbacks, net, epochs_done
        self.runner, self.trainer = runner, trainer

    def of(self, cls: type) -> Any:
        return next(c for c in self.callbacks if isinstance(c, cls))


def fit_lightning(make_callbacks: Callable[[], list[Any]], *, epochs: int = 6, lr: float = 0.5,
                  noise: float = 0.8, step_lr: int | None = None, logger: bool = False,
                  work_dir: Path | None = None) -> Run:
    train, val = data(noise)
    net = initial_net()
    callbacks = make_callbacks()
    root = str(work_dir or tempfile.mkdtemp())
    trainer = pl.Trainer(
        max_epochs=epochs, accelerator="cpu", devices=1, enable_progress_bar=False,
        enable_checkpointing=False, enable_model_summary=False, num_sanity_val_steps=0,
        logger=pl.loggers.CSVLogger(root) if logger else False, default_root_dir=root,
        callbacks=callbacks, log_every_n_steps=1)
    trainer.fit(TwinModule(net, lr, step_lr), DataLoader(train, batch_size=BATCH),
                DataLoader(val, batch_size=BATCH))
    return Run(callbacks, net, trainer.current_epoch, trainer=trainer)


def fit_hookline(make_callbacks: Callable[[], list[Any]], *, epochs: int = 6, lr: float = 0.5,
                 noise: float = 0.8, step_lr: int | None = None, work_dir: Path | None = None,
                 **runner_kwargs: Any) -> Run:
    train, val = data(noise)
    net = initial_net()
    callbacks = make_callbacks()
    scheduler = None if step_lr is None else {"type": "StepLR", "step_size": step_lr, "gamma": 0.5}
    runner = Runner(
        net, optimizer={"type": "SGD", "lr": lr}, loss_fn=torch.nn.CrossEntropyLoss(),
        param_scheduler=scheduler,
        train_dataloader=DataLoader(train, batch_size=BATCH),
        val_dataloader=DataLoader(val, batch_size=BATCH), metrics={"accuracy": "accuracy"},
        max_epochs=epochs, work_dir=work_dir or tempfile.mkdtemp(), hooks=callbacks,
        default_hooks=runner_kwargs.pop("default_hooks", {"logger": None, "progress": None,
                                                          "checkpoint": None}),
        **runner_kwargs)
    runner.train()
    return Run(callbacks, net, runner.epoch, runner=runner)


def both(make_callbacks: Callable[[], list[Any]], **kwargs: Any) -> tuple[Run, Run]:
    return fit_lightning(make_callbacks, **kwargs), fit_hookline(make_callbacks, **kwargs)
