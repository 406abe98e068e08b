"""MMEngine's ``train_loop`` ``dynamic_intervals`` is refused with what to do instead (goes to
tests/engine/ once item12_dynamic_intervals.diff is applied)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner
from hookline.app.config import build_runner


def test_dynamic_intervals_is_refused_saying_what_to_do(tmp_path):
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    with pytest.raises(ConfigError) as info:
        Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
               loss_fn=torch.nn.CrossEntropyLoss(), train_dataloader=DataLoader(data, batch_size=8),
               max_epochs=6, work_dir=tmp_path,
               train_loop={"type": "EpochBasedTrainLoop", "dynamic_intervals": [(4, 1)]})
    message = str(info.value)
    assert "dynamic_intervals" in message and "not supported" in message
    assert "runner.train_loop.val_interval" in message and "did you mean" not in message
    cfg = {"model": {"type": "DigitsCNN"}, "loss_fn": {"type": "CrossEntropyLoss"},
           "optimizer": {"type": "SGD", "lr": 0.1}, "max_epochs": 2,
           "train_dataloader": {"dataset": {"type": "DigitsDataset"}},
           "train_loop": {"type": "EpochBasedTrainLoop", "dynamic_intervals": [[4, 1]]}}
    with pytest.raises(ConfigError, match="dynamic_intervals.*not supported"):
        build_runner(cfg, work_dir=tmp_path / "cfg", for_training=True)


def test_the_interval_set_from_a_hook_is_what_the_loop_uses(tmp_path):
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(),
                    train_dataloader=DataLoader(data, batch_size=8),
                    val_dataloader=DataLoader(data, batch_size=8), max_epochs=6, val_interval=2,
                    work_dir=tmp_path, default_hooks={"progress": None, "logger": None})
    seen = []

    @runner.on("before_train_epoch")
    def switch(runner):
        if runner.epoch + 1 >= 4:  # MMEngine's dynamic_intervals=[(4, 1)]
            runner.train_loop.val_interval = 1

    runner.on("after_val_epoch", lambda runner: seen.append(runner.epoch))
    runner.train()
    assert seen == [2, 4, 5, 6]  # as MMEngine validates with val_interval=2, [(4, 1)]
