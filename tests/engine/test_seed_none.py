"""``seed=None``: a Runner that leaves the process's RNGs as they are; the default seeds 0."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner
from hookline.core import ConfigError


def _net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 2))


def _runner(work_dir: Path, model: torch.nn.Module, **kwargs: Any) -> Runner:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(32, 4, generator=generator)
    options: dict[str, Any] = dict(
        optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
        train_dataloader=DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=4,
                                    shuffle=True),
        max_epochs=2, work_dir=str(work_dir),
        default_hooks={"logger": None,
                       "checkpoint": {"type": "CheckpointHook", "interval": 3, "by_epoch": False}})
    options.update(kwargs)
    return Runner(model, **options)


def _draws() -> tuple[float, float, float]:
    return random.random(), float(np.random.rand()), float(torch.rand(()))


def test_seed_none_leaves_the_global_rngs_as_they_are(tmp_path: Path) -> None:
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    expected = _draws()
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    runner = _runner(tmp_path, _net(), seed=None)
    assert (runner.seeded, runner.seed) == (False, 0)
    torch.manual_seed(99)  # building the net drew from torch's RNG: only that is put back
    assert _draws()[:2] == expected[:2]


def test_the_default_still_seeds_every_rng_with_0(tmp_path: Path) -> None:
    random.seed(0), np.random.seed(0), torch.manual_seed(0)
    expected = _draws()
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    runner = _runner(tmp_path, _net())
    assert (runner.seeded, runner.seed) == (True, 0)
    assert _draws() == expected


@pytest.mark.parametrize("seed", ["random", 1.5, True])
def test_a_seed_that_is_not_an_int_or_none_is_refused(tmp_path: Path, seed: Any) -> None:
    with pytest.raises(ConfigError, match=r"seed must be an int, or None \(do not seed"):
        _runner(tmp_path, _net(), seed=seed)


class Fail(Hook):
    def after_train_iter(self, runner: Any, batch_idx: int, data_batch: Any = None,
                         outputs: Any = None) -> None:
        if runner.iter == 10:
            raise RuntimeError("stop")


def test_a_resume_with_seed_none_is_exact(tmp_path: Path) -> None:
    torch.manual_seed(3)
    whole = _net()
    start = [p.detach().clone() for p in whole.parameters()]
    state = torch.get_rng_state()
    _runner(tmp_path / "whole", whole, seed=None).train()
    stopped = _net()
    with torch.no_grad():
        for param, value in zip(stopped.parameters(), start):
            param.copy_(value)
    torch.set_rng_state(state)  # the process RNG state the whole run started with
    with pytest.raises(RuntimeError, match="stop"):
        _runner(tmp_path / "stopped", stopped, seed=None, hooks=[Fail()]).train()
    torch.manual_seed(12345)  # another process state: the checkpoint's RNG states count
    resumed = _runner(tmp_path / "stopped", _net(), seed=None, resume="auto")
    resumed.train()
    assert resumed.iter == 16
    for a, b in zip(whole.parameters(), resumed.model.parameters()):
        assert torch.equal(a, b)
