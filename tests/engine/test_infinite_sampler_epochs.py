"""An InfiniteSampler never ends an epoch: a max_epochs run with one is refused as the Runner
is built (it would hang in its first epoch); a max_iters run trains."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import TensorDataset

from hookline import Runner
from hookline.core import ConfigError


def _loader():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 4, generator=g)
    return {"dataset": TensorDataset(x, (x[:, 0] > 0).long()), "batch_size": 4,
            "sampler": {"type": "InfiniteSampler", "shuffle": True}}


def _runner(tmp_path, **length):
    torch.manual_seed(0)
    return Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                  loss_fn=torch.nn.CrossEntropyLoss(), train_dataloader=_loader(),
                  work_dir=tmp_path, default_hooks={"progress": None, "checkpoint": None},
                  **length)


def test_max_epochs_with_infinite_sampler_refused(tmp_path):
    with pytest.raises(ConfigError, match="InfiniteSampler never ends an epoch.*max_iters"):
        _runner(tmp_path, max_epochs=1)
    assert not any(tmp_path.iterdir())


def test_max_iters_with_infinite_sampler_trains(tmp_path):
    runner = _runner(tmp_path, max_iters=6)
    runner.train()
    assert runner.iter == 6
