"""The Runner checks save_best / monitor names, and save_best's need for a validation, at
construction: before anything is written (not after the first epoch)."""

from __future__ import annotations

import json

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.core import ConfigError
from hookline.hooks import CheckpointHook, EarlyStoppingHook
from hookline.hooks.metrics_file import json_line


def _data() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 4, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long())


def _runner(tmp_path, *, val=True, metrics=None, **kw) -> Runner:
    torch.manual_seed(0)
    data = _data()
    return Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(data, batch_size=16),
                  val_dataloader=DataLoader(data, batch_size=16) if val else None,
                  metrics={"accuracy": "accuracy"} if metrics is None else metrics,
                  max_epochs=2, work_dir=tmp_path / "run", **kw)


def test_save_best_typo_refused_at_construction(tmp_path):
    with pytest.raises(ConfigError, match=r"save_best: 'acc' is not a validation metric.*"
                                          r"did you mean 'accuracy'"):
        _runner(tmp_path, default_hooks={"progress": None,
                                         "checkpoint": {"type": "CheckpointHook",
                                                        "save_best": "acc"}})
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_plateau_monitor_typo_refused_at_construction(tmp_path):
    with pytest.raises(ConfigError, match="ReduceLROnPlateau monitor: 'val_los'"):
        _runner(tmp_path, param_scheduler={"type": "ReduceLROnPlateau", "monitor": "val_los"})


def test_early_stopping_typo_refused_at_construction(tmp_path):
    with pytest.raises(ConfigError, match="EarlyStoppingHook monitor: 'acuracy'"):
        _runner(tmp_path, hooks=[EarlyStoppingHook("acuracy", rule="greater")])


def test_unknown_names_left_to_validation(tmp_path):
    # a metric that may return a dict: its names are known once it ran
    _runner(tmp_path, metrics={"m": lambda p, t: {"top1": 1.0}},
            default_hooks={"checkpoint": {"type": "CheckpointHook", "save_best": "m/top1"}})


def test_early_stopping_accepts_lightning_val_prefix(tmp_path):
    hook = EarlyStoppingHook(monitor="val_loss", patience=1)
    runner = _runner(tmp_path, hooks=[hook], default_hooks={"progress": None},
                     param_scheduler={"type": "ReduceLROnPlateau", "monitor": "val_loss"})
    runner.train()
    assert hook.best_score is not None and runner.epoch == 2


def test_save_best_without_validation_refused(tmp_path):
    with pytest.raises(ConfigError, match="no validation: give val_dataloader"):
        _runner(tmp_path, val=False, default_hooks={
            "checkpoint": {"type": "CheckpointHook", "save_best": "accuracy"}})


def test_save_best_without_validation_refused_when_registered_late(tmp_path):
    runner = _runner(tmp_path, val=False, default_hooks={"checkpoint": None})
    runner.register_hook(CheckpointHook(save_best="loss"))
    with pytest.raises(Exception, match="no validation: give val_dataloader"):
        runner.train()


@pytest.mark.parametrize("which", ["early", "plateau"])
def test_non_number_metric_named_clearly(tmp_path, which):
    metrics = {"accuracy": "accuracy", "vec": lambda p, t: [0.1, 0.2]}
    kw = ({"hooks": [EarlyStoppingHook("vec", rule="greater")]} if which == "early" else
          {"param_scheduler": {"type": "ReduceLROnPlateau", "monitor": "vec"}})
    runner = _runner(tmp_path, metrics=metrics, default_hooks={"progress": None}, **kw)
    with pytest.raises(Exception, match=r"'vec' is a list \(\[0.1, 0.2\]\), not one number"):
        runner.train()


def test_json_line_writes_any_object():
    line = json_line({"iter": 1, "odd": object()})
    assert json.loads(line)["odd"].startswith("<object object")
