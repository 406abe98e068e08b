"""The config check: ReduceLROnPlateau's monitor takes Lightning's val_ prefix as the hook
does, and a CheckpointHook's save_best needs a validation."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline.app.config_check.run import check_run
from hookline.core import ConfigError


def _cfg(**extra):
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))
    cfg = {"model": torch.nn.Linear(4, 2), "loss_fn": {"type": "CrossEntropyLoss"},
           "optimizer": {"type": "SGD", "lr": 0.1}, "max_epochs": 1,
           "train_dataloader": DataLoader(data, batch_size=4),
           "val_dataloader": DataLoader(data, batch_size=4),
           "metrics": {"accuracy": "accuracy"}}
    cfg.update(extra)
    return cfg


def test_plateau_val_prefix_accepted():
    check_run(_cfg(param_scheduler={"type": "ReduceLROnPlateau", "monitor": "val_loss"}),
              for_training=True)
    with pytest.raises(ConfigError, match="'val_los' is not a validation metric"):
        check_run(_cfg(param_scheduler={"type": "ReduceLROnPlateau", "monitor": "val_los"}),
                  for_training=True)


def test_save_best_without_validation():
    cfg = _cfg(val_dataloader=None,
               default_hooks={"checkpoint": {"type": "CheckpointHook", "save_best": "loss"}})
    with pytest.raises(ConfigError, match=r"default_hooks.checkpoint.save_best='loss'.*"
                                          "no validation: give val_dataloader"):
        check_run(cfg, for_training=True)
    check_run(cfg, for_training=False)
