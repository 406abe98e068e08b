"""Validation values already named for validation (a LightningModule's ``self.log("val_loss")``,
``metrics={"val/acc": ...}``) reach Keras's logs and Lightning's ``callback_metrics`` under that
name, not ``val_val_loss``: a Keras or Lightning callback monitoring ``"val_loss"`` acts on them.
A metric named for validation is not reported for training batches."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner

from ._twins import keras, one_thread  # noqa: F401  (autouse: one torch thread)
from .lightning_toy import TinyRegressor, loader, pl


class EpochLogs(keras.callbacks.Callback):
    def __init__(self) -> None:
        super().__init__()
        self.epochs: list[dict[str, Any]] = []

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.epochs.append(dict(logs or {}))


class CallbackMetrics(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[set[str]] = []

    def on_validation_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self.seen.append(set(trainer.callback_metrics))


def test_a_lightning_modules_val_loss_is_val_loss_for_keras_callbacks(tmp_path) -> None:
    logs = EpochLogs()
    stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=0, min_delta=10.0)
    runner = Runner(TinyRegressor(), train_dataloader=loader(), val_dataloader=loader(),
                    max_epochs=5, work_dir=str(tmp_path), hooks=[logs, stop],
                    default_hooks={"logger": None, "progress": None, "checkpoint": None})
    runner.train()
    assert "val_loss" in logs.epochs[0] and "val_val_loss" not in logs.epochs[0]
    assert stop.stopped_epoch == 1 and runner.epoch == 2  # it acted: no improvement of 10


def test_a_metric_named_val_slash_acc_is_the_validation_accuracy(tmp_path) -> None:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=generator)
    y = (x[:, 0] > 0).long()
    logs, seen = EpochLogs(), CallbackMetrics()
    torch.manual_seed(0)
    runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(),
                    train_dataloader=DataLoader(TensorDataset(x[:48], y[:48]), batch_size=16),
                    val_dataloader=DataLoader(TensorDataset(x[48:], y[48:]), batch_size=16),
                    metrics={"val/acc": "accuracy"}, max_epochs=2, work_dir=str(tmp_path),
                    hooks=[logs, seen],
                    default_hooks={"logger": None, "progress": None, "checkpoint": None})
    runner.train()
    validation = runner.val_loop.last_metrics
    assert sorted(logs.epochs[-1]) == ["loss", "val/acc", "val_loss"]  # no training "val/acc"
    assert logs.epochs[-1]["val/acc"] == validation["val/acc"]
    assert "val/acc" in seen.seen[-1] and "val_val/acc" not in seen.seen[-1]
