"""ParamSchedulerHook on real runs: per-iteration and per-epoch torch schedulers against
hand-stepped ones, ReduceLROnPlateau after validation (and across a resume), and the
PolyLR / ExponentialWarmupLR schedulers it registers."""

from __future__ import annotations

import pytest
import torch
from torch.optim import lr_scheduler as ts
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Hook, HookError, Runner
from hookline.engine.registries import PARAM_SCHEDULERS
from hookline.hooks import EvalHook, ExponentialWarmupLR, PolyLR


class Record(Hook):
    priority = "LOWEST"

    def __init__(self) -> None:
        self.lrs: list[float] = []
        self.val: list[tuple[float, float]] = []  # (monitored metric, lr after the plateau step)

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self.lrs.append(runner.optimizer.param_groups[0]["lr"])

    def after_val_epoch(self, runner, metrics=None) -> None:
        self.val.append((metrics["score"], runner.optimizer.param_groups[0]["lr"]))


def data() -> TensorDataset:
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(32, 4, generator=generator)
    return TensorDataset(x, (x[:, 1] > 0).long())


def score(preds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """A validation metric that stops improving after the first epochs (plateaus)."""
    return torch.clamp((preds.argmax(1) == targets).float().mean(), max=0.6)


def make_runner(work_dir, *, param_scheduler=None, max_epochs=None, max_iters=None, hooks=(),
                val=True, checkpoint=None, resume=None) -> Runner:
    torch.manual_seed(0)
    return Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                  loss_fn=torch.nn.CrossEntropyLoss(), param_scheduler=param_scheduler,
                  train_dataloader=DataLoader(data(), batch_size=4, shuffle=True),  # 8 batches
                  val_dataloader=DataLoader(data(), batch_size=8) if val else None,
                  metrics={"score": score}, max_epochs=max_epochs, max_iters=max_iters,
                  work_dir=work_dir, device="cpu", hooks=hooks, resume=resume,
                  default_hooks={"logger": None, "progress": None, "checkpoint": checkpoint})


def hand(scheduler_fn, steps: int, every: int = 1) -> list[float]:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    scheduler = scheduler_fn(optimizer)
    lrs = []
    for i in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        if (i + 1) % every == 0:
            scheduler.step()
    return lrs


def test_per_iteration_scheduler_gives_torch_values_every_iteration(tmp_path):
    record = Record()
    make_runner(tmp_path, max_epochs=3, hooks=[record], val=False, param_scheduler=[
        {"type": "CosineAnnealingLR", "T_max": 24, "eta_min": 0.01, "by_epoch": False}]).train()
    assert record.lrs == hand(lambda o: ts.CosineAnnealingLR(o, T_max=24, eta_min=0.01), 24)


def test_per_epoch_scheduler_in_an_iteration_based_run_steps_every_pass(tmp_path):
    record = Record()
    make_runner(tmp_path, max_iters=20, hooks=[record], val=False,
                param_scheduler={"type": "StepLR", "step_size": 1, "gamma": 0.5}).train()
    assert record.lrs == hand(lambda o: ts.StepLR(o, step_size=1, gamma=0.5), 20, every=8)
    assert record.lrs[7] == 0.1 and record.lrs[8] == 0.05 and record.lrs[16] == 0.025


def test_reduce_lr_on_plateau_steps_after_each_validation_on_its_metric(tmp_path):
    record = Record()
    runner = make_runner(tmp_path, max_epochs=5, hooks=[record], param_scheduler={
        "type": "ReduceLROnPlateau", "mode": "max", "factor": 0.5, "patience": 0,
        "monitor": "score"})
    runner.train()
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    plateau = ts.ReduceLROnPlateau(optimizer, mode="max", factor=0.5, patience=0)
    for value, lr in record.val:
        plateau.step(value)
        assert lr == optimizer.param_groups[0]["lr"]
    assert record.val[-1][1] < 0.1  # the metric plateaued, so the lr came down
    # within an epoch the lr only changes at validations
    assert record.lrs[8:16] == [record.val[0][1]] * 8
    # a standalone validation afterwards does not step it
    before = runner.optimizer.param_groups[0]["lr"]
    runner.val()
    assert runner.optimizer.param_groups[0]["lr"] == before


def test_reduce_lr_on_plateau_state_survives_resume(tmp_path):
    plateau = {"type": "ReduceLROnPlateau", "mode": "max", "factor": 0.5, "patience": 1,
               "monitor": "score"}
    full = Record()
    make_runner(tmp_path / "a", max_epochs=6, hooks=[full], param_scheduler=plateau,
                checkpoint={"type": "CheckpointHook"}).train()
    resumed = Record()
    make_runner(tmp_path / "b", max_epochs=6, hooks=[resumed], param_scheduler=plateau,
                resume=tmp_path / "a" / "epoch_3.pth").train()
    assert resumed.val == full.val[3:]
    assert resumed.lrs == full.lrs[24:]


def test_reduce_lr_on_plateau_steps_on_eval_hook_metrics(tmp_path):
    record = Record()
    make_runner(tmp_path, max_epochs=4, val=False, hooks=[
        EvalHook(DataLoader(data(), batch_size=8)), record], param_scheduler={
        "type": "ReduceLROnPlateau", "mode": "max", "factor": 0.5, "patience": 0,
        "monitor": "score"}).train()
    assert len(record.val) == 4 and record.val[-1][1] < 0.1


def test_missing_monitored_metric_is_a_config_error_naming_the_metrics(tmp_path):
    runner = make_runner(tmp_path, max_epochs=2, param_scheduler={
        "type": "ReduceLROnPlateau", "monitor": "f1"})
    with pytest.raises(HookError) as info:
        runner.train()
    assert isinstance(info.value.__cause__, ConfigError)
    assert "monitors 'f1'" in str(info.value) and "'score'" in str(info.value)


def test_poly_and_exponential_warmup_are_registered_and_match_their_closed_forms():
    assert PARAM_SCHEDULERS.get("PolyLR") is PolyLR
    assert PARAM_SCHEDULERS.get("ExponentialWarmupLR") is ExponentialWarmupLR
    lrs = hand(lambda o: PolyLR(o, total_iters=10, power=2.0, eta_min=0.01), 14)
    for t, lr in enumerate(lrs):
        assert lr == pytest.approx(0.01 + 0.09 * (1 - min(t, 10) / 10) ** 2, rel=1e-12)
    lrs = hand(lambda o: ExponentialWarmupLR(o, start_factor=0.001, total_iters=5), 8)
    for t, lr in enumerate(lrs):
        assert lr == pytest.approx(0.1 * 0.001 ** (1 - min(t, 5) / 5), rel=1e-12)
    with pytest.raises(ConfigError):
        PolyLR(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1), total_iters=0)
