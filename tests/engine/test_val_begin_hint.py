"""``Runner(val_begin=...)``, MMEngine's ``train_cfg`` key given as a Runner argument, names
where it goes (``train_loop={'val_begin': n}``), not the nearest argument's name."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.core import ConfigError


def kwargs(tmp_path):
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    return dict(work_dir=tmp_path, train_dataloader=DataLoader(data, batch_size=4),
                val_dataloader=DataLoader(data, batch_size=8), metrics={"acc": "accuracy"},
                loss_fn=torch.nn.CrossEntropyLoss(), optimizer={"type": "SGD", "lr": 0.1},
                default_hooks={"logger": None, "progress": None, "checkpoint": None})


def test_val_begin_as_a_runner_argument_points_to_train_loop(tmp_path):
    with pytest.raises(ConfigError) as error:
        Runner(torch.nn.Linear(4, 2), max_iters=30, val_interval=10, val_begin=15,
               **kwargs(tmp_path))
    assert "train_loop={'val_begin': n}" in str(error.value)
    assert "did you mean" not in str(error.value)


def test_the_hint_is_what_works(tmp_path):
    seen = []
    runner = Runner(torch.nn.Linear(4, 2), max_iters=30, val_interval=10,
                    train_loop={"val_begin": 15}, **kwargs(tmp_path))
    runner.on("after_val_epoch", lambda runner, **_: seen.append(runner.iter))
    runner.train()
    assert runner.train_loop.val_begin == 15 and seen == [20, 30]
