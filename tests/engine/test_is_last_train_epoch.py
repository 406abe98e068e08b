"""``Hook.is_last_train_epoch`` in iteration-based runs: True during the last pass over the
data (``runner.max_epochs`` counts passes there), as MMEngine's is during its one "epoch"."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.compat.mmengine.hooks import Hook as MMEngineHook


def data(n: int = 24) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


class Flags(MMEngineHook):
    """Records is_last_train_epoch where a ported hook asks it."""

    priority = "LOWEST"

    def __init__(self) -> None:
        self.iters: list[bool] = []
        self.epoch_ends: list[bool] = []
        self.starts: list[bool] = []

    def before_train_epoch(self, runner):
        self.starts.append(self.is_last_train_epoch(runner))

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self.iters.append(self.is_last_train_epoch(runner))

    def after_train_epoch(self, runner):
        self.epoch_ends.append(self.is_last_train_epoch(runner))


def run(tmp_path, loader, **kwargs) -> tuple[Runner, Flags]:
    flags = Flags()
    torch.manual_seed(0)
    runner = Runner(torch.nn.Linear(4, 2), work_dir=tmp_path, train_dataloader=loader,
                    loss_fn=torch.nn.CrossEntropyLoss(), optimizer={"type": "SGD", "lr": 0.1},
                    hooks=[flags], default_hooks={"logger": None, "progress": None,
                                                  "checkpoint": None}, **kwargs)
    runner.train()
    return runner, flags


def test_true_during_the_last_pass_of_an_iteration_run(tmp_path):
    runner, flags = run(tmp_path, DataLoader(data(), batch_size=8), max_iters=20)
    assert runner.max_epochs == 7  # passes of 3 batches; the last one partial
    assert flags.iters == [False] * 18 + [True] * 2
    assert flags.starts == [False] and flags.epoch_ends == [True]


def test_one_pass_is_the_last_throughout(tmp_path):
    _, flags = run(tmp_path, DataLoader(data(), batch_size=8), max_iters=3)
    assert flags.iters == [True] * 3 and flags.starts == [True] and flags.epoch_ends == [True]


def test_counted_in_len_passes_with_an_endless_sampler(tmp_path):
    loader = {"dataset": data(), "batch_size": 8, "sampler": {"type": "InfiniteSampler"}}
    runner, flags = run(tmp_path, loader, max_iters=8)
    assert runner.max_epochs == 3
    assert flags.iters == [False] * 6 + [True] * 2


def test_epoch_runs_keep_their_meaning(tmp_path):
    _, flags = run(tmp_path, DataLoader(data(), batch_size=8), max_epochs=2)
    assert flags.iters == [False] * 3 + [True] * 3
    assert flags.starts == [False, True] and flags.epoch_ends == [False, True]
