"""MMEngine's schedulers with ``end`` left out run to the end of the run, as MMEngine's Runner
sets ``end`` to ``max_epochs`` (``by_epoch``) or ``max_iters``: a PolyLR decays to ``eta_min``
at the last epoch, a CosineAnnealingLR without ``T_max`` anneals over the whole run, and a
by-epoch scheduler does not step once more after the last epoch."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import hookline.compat.mmengine.optim  # noqa: F401  (the "mmengine" scope)
from hookline import Hook, Runner
from hookline.engine.schedule_length import SchedulerSteps, fill_run_lengths

QUIET = {"logger": None, "progress": None, "checkpoint": None}


class Rates(Hook):
    priority = "LOWEST"

    def __init__(self) -> None:
        self.lrs: list[float] = []

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self.lrs.append(runner.optimizer.param_groups[0]["lr"])


def run(tmp_path, scheduler, **length) -> tuple[Runner, list[float]]:
    torch.manual_seed(0)
    rates = Rates()
    runner = Runner(torch.nn.Linear(2, 1), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.MSELoss(), param_scheduler=[scheduler],
                    train_dataloader=DataLoader(TensorDataset(torch.ones(8, 2),
                                                              torch.ones(8, 1)), batch_size=2),
                    work_dir=str(tmp_path), default_hooks=QUIET, hooks=[rates], **length)
    runner.train()
    return runner, rates.lrs


def test_poly_without_end_decays_to_eta_min_at_the_last_epoch(tmp_path) -> None:
    runner, lrs = run(tmp_path, {"type": "mmengine.PolyLR", "eta_min": 0.0, "power": 1.0,
                                 "by_epoch": True}, max_epochs=4)  # 4 batches an epoch
    epochs = [lrs[i] for i in range(0, 16, 4)]
    assert epochs == pytest.approx([0.1, 0.1 * 2 / 3, 0.1 / 3, 0.0])  # MMEngine's, end=4
    assert runner.param_schedulers[0].end == 4
    assert runner.optimizer.param_groups[0]["lr"] == pytest.approx(0.0)


def test_cosine_without_t_max_or_end_anneals_over_max_iters(tmp_path) -> None:
    _, lrs = run(tmp_path, {"type": "mmengine.CosineAnnealingLR", "eta_min": 0.0,
                            "by_epoch": False}, max_epochs=None, max_iters=10)
    assert lrs[0] == pytest.approx(0.1) and lrs[5] == pytest.approx(0.05)
    assert lrs[-1] < 0.003  # the last of 10 iterations: near eta_min


def test_an_exponential_by_epoch_scheduler_stops_at_the_last_epoch(tmp_path) -> None:
    runner, _ = run(tmp_path, {"type": "mmengine.ExponentialLR", "gamma": 0.9}, max_epochs=3)
    assert runner.optimizer.param_groups[0]["lr"] == pytest.approx(0.1 * 0.9 ** 2)  # as MMEngine


def test_every_iteration_schedulers_count_iterations_not_optimizer_steps() -> None:
    steps = SchedulerSteps(per_epoch=3, per_iter=6, iterations=12)  # accumulating 2 batches
    cfg = {"type": "mmengine.PolyLR", "by_epoch": False}
    assert fill_run_lengths(cfg, steps)["end"] == 12
    assert fill_run_lengths({**cfg, "by_epoch": True}, steps)["end"] == 3
    assert fill_run_lengths({**cfg, "end": 5}, steps)["end"] == 5  # given: kept
    assert fill_run_lengths({**cfg, "begin": 200}, None)["end"] == 300  # a placeholder past begin
