"""Lightning's ``max_steps`` counts optimizer steps: ``Trainer(max_steps=6,
accumulate_grad_batches=4)`` trains 24 batches. Both directions agree with it: the trainer
facade of a hookline run (``max_steps`` is the optimizer steps ``global_step`` reaches), and
the runner facade of hookline hooks inside a Trainer (``max_iters`` is the batches)."""

from __future__ import annotations

import tempfile
from types import SimpleNamespace

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner

from ._lightning_twins import one_thread, pl  # noqa: F401

bridge = pytest.importorskip("hookline.integrations.lightning")
facade = pytest.importorskip("hookline.integrations.lightning_facade")


def data(n: int = 64) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


class Lit(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 2)
        self.batches = 0

    def training_step(self, batch, batch_idx):
        self.batches += 1
        x, y = batch
        return torch.nn.functional.cross_entropy(self.fc(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Budget(pl.Callback):
    """A callback that acts once the step budget is reached (``global_step >= max_steps``)."""

    def __init__(self) -> None:
        self.start: tuple | None = None
        self.reached: list[int] = []
        self.end: int | None = None

    def on_train_start(self, trainer, pl_module):
        self.start = (trainer.max_steps, trainer.estimated_stepping_batches)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps:
            self.reached.append(pl_module.batches)

    def on_train_end(self, trainer, pl_module):
        self.end = trainer.global_step


def test_lightning_counts_optimizer_steps():
    budget, module = Budget(), Lit()
    pl.Trainer(max_steps=6, accumulate_grad_batches=4, callbacks=[budget], logger=False,
               enable_checkpointing=False, enable_progress_bar=False,
               enable_model_summary=False, default_root_dir=tempfile.mkdtemp()).fit(
        module, DataLoader(data(), batch_size=8))
    assert module.batches == 24 and budget.start == (6, 6) and budget.end == 6
    assert budget.reached == [24]


def test_the_trainer_facade_reports_the_optimizer_steps_of_max_iters(tmp_path):
    budget, module = Budget(), Lit()
    Runner(module, train_dataloader=DataLoader(data(), batch_size=8), max_iters=24,
           optim_wrapper={"accumulative_counts": 4}, hooks=[budget], work_dir=tmp_path,
           default_hooks={"logger": None, "progress": None, "checkpoint": None}).train()
    # as Lightning's Trainer(max_steps=6, accumulate_grad_batches=4) above
    assert module.batches == 24 and budget.start == (6, 6) and budget.end == 6
    assert budget.reached == [24]


def test_a_last_shorter_group_is_one_more_step(tmp_path):
    budget, module = Budget(), Lit()
    Runner(module, train_dataloader=DataLoader(data(), batch_size=8), max_iters=6,
           optim_wrapper={"accumulative_counts": 4}, hooks=[budget], work_dir=tmp_path,
           default_hooks={"logger": None, "progress": None, "checkpoint": None}).train()
    assert module.batches == 6 and budget.start == (2, 2) and budget.end == 2
    assert budget.reached == [6]


def test_the_runner_facade_counts_the_batches_of_max_steps():
    runner = facade.LightningRunner()
    for batches, group, expected in ((8, 4, 24), (7, 4, 21), (5, 1, 6), (None, 4, 24)):
        trainer = SimpleNamespace(max_steps=6, max_epochs=-1, accumulate_grad_batches=group,
                                  num_training_batches=float("inf") if batches is None
                                  else batches)
        runner.bind(trainer, None)
        assert runner.max_iters == expected, (batches, group)


def test_a_hookline_hook_in_a_trainer_sees_the_last_batch_of_max_steps(tmp_path):
    class Last(Hook):
        def __init__(self) -> None:
            self.max_iters: list[int | None] = []
            self.last: list[int] = []

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            self.max_iters.append(runner.max_iters)
            if self.is_last_train_iter(runner):
                self.last.append(runner.iter)

    hook, module = Last(), Lit()
    # 7 batches per epoch: groups of 4 and 3, two steps per epoch -> 6 steps in 21 batches
    pl.Trainer(max_steps=6, accumulate_grad_batches=4, callbacks=[bridge.HookCallback(hook)],
               logger=False, enable_checkpointing=False, enable_progress_bar=False,
               enable_model_summary=False, default_root_dir=str(tmp_path)).fit(
        module, DataLoader(data(56), batch_size=8))
    assert module.batches == 21
    assert set(hook.max_iters) == {21} and hook.last == [20]
