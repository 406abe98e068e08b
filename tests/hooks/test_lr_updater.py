"""LrUpdaterHook and MomentumUpdaterHook on real runs: the lr and momentum of every
iteration against torch's own schedulers stepped by hand (and mmcv's formulas), resume
in the middle of a run, and early ConfigErrors."""

from __future__ import annotations

import math

import pytest
import torch
from torch.optim import lr_scheduler as ts
from torch.utils.data import DataLoader, TensorDataset

from hookline import HOOKS, ConfigError, Hook, HookError, Runner
from hookline.hooks import ExponentialWarmupLR, LrUpdaterHook, MomentumUpdaterHook, PolyLR

LR, EPOCHS, BATCHES = 0.1, 3, 10  # 40 samples / batch 4 = 10 iterations per epoch
TOTAL = EPOCHS * BATCHES


class Record(Hook):
    """The lr and momentum each training step uses (read just before the step)."""

    priority = "LOWEST"

    def __init__(self) -> None:
        self.lrs: list[list[float]] = []
        self.momenta: list[list[float]] = []

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        groups = runner.optimizer.param_groups
        self.lrs.append([g["lr"] for g in groups])
        self.momenta.append([g["momentum"] if "momentum" in g else g["betas"][0] for g in groups])


def make_runner(work_dir, hooks=(), *, optimizer=None, max_epochs=EPOCHS, max_iters=None,
                checkpoint=None, resume=None) -> Runner:
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(40, 4, generator=generator)
    data = TensorDataset(x, (x[:, 0] > 0).long())
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    return Runner(model, optimizer=optimizer or {"type": "SGD", "lr": LR, "momentum": 0.9},
                  loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=None if max_iters else max_epochs,
                  max_iters=max_iters, train_dataloader=DataLoader(data, batch_size=4, shuffle=True),
                  work_dir=work_dir, device="cpu", hooks=hooks, resume=resume,
                  default_hooks={"logger": None, "progress": None, "checkpoint": checkpoint})


def torch_reference(build, steps: int = TOTAL, per_epoch: int = BATCHES, lr: float = LR,
                    momentum: float = 0.9) -> tuple[list[float], list[float]]:
    """lr/momentum before each of ``steps`` iterations from torch schedulers stepped by hand.

    ``build(new_optimizer)`` returns (scheduler, steps_per_epoch) pairs; each scheduler may
    have an optimizer of its own (``new_optimizer()``), and the lr is then ``lr`` times the
    product of each one's factor (mmcv's warm-up times policy)."""
    def new_optimizer():
        return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr, momentum=momentum)

    schedulers = build(new_optimizer)
    optimizers = list({id(s.optimizer): s.optimizer for s, _ in schedulers}.values())
    lrs, momenta = [], []
    for i in range(steps):
        value = lr
        for optimizer in optimizers:
            value *= optimizer.param_groups[0]["lr"] / lr
        lrs.append(value)
        momenta.append(optimizers[0].param_groups[0]["momentum"])
        for optimizer in optimizers:
            optimizer.step()
        for scheduler, by_epoch in schedulers:
            if not by_epoch:
                scheduler.step()
        if (i + 1) % per_epoch == 0:
            for scheduler, by_epoch in schedulers:
                if by_epoch:
                    scheduler.step()
    return lrs, momenta


def run_lrs(tmp_path, **hook_args) -> list[float]:
    record = Record()
    make_runner(tmp_path, [LrUpdaterHook(**hook_args), record]).train()
    assert len(record.lrs) == TOTAL
    return [lrs[0] for lrs in record.lrs]


def test_cosine_with_linear_warmup_equals_torch_chained_schedulers_every_iteration(tmp_path):
    lrs = run_lrs(tmp_path, policy="CosineAnnealing", by_epoch=False, min_lr=0.0,
                  warmup="linear", warmup_iters=7, warmup_ratio=0.1)
    # with no floor, torch's ChainedScheduler on one optimizer gives the same product
    def chained(new_optimizer):
        opt = new_optimizer()
        return [(ts.ChainedScheduler([ts.LinearLR(opt, start_factor=0.1, total_iters=7),
                                      ts.CosineAnnealingLR(opt, T_max=TOTAL, eta_min=0.0)]), False)]

    expected, _ = torch_reference(chained)
    assert lrs == pytest.approx(expected, rel=1e-12)
    # and mmcv's own formula: the cosine counts from iteration 0, the warm-up scales it
    for i, lr in enumerate(lrs):
        regular = LR * (1 + math.cos(math.pi * i / TOTAL)) / 2
        factor = 0.1 + 0.9 * i / 7 if i < 7 else 1.0
        assert lr == pytest.approx(regular * factor, rel=1e-9)


def test_step_by_epoch_with_warmup_by_iteration_across_an_epoch_boundary(tmp_path):
    lrs = run_lrs(tmp_path, policy="step", step=[1, 2], gamma=0.5, warmup="linear",
                  warmup_iters=15, warmup_ratio=0.2)
    expected, _ = torch_reference(lambda new: [
        (ts.LinearLR(new(), start_factor=0.2, total_iters=15), False),
        (ts.MultiStepLR(new(), milestones=[1, 2], gamma=0.5), True)])
    assert lrs == pytest.approx(expected, rel=1e-12)
    for i, lr in enumerate(lrs):
        regular = LR * 0.5 ** sum(i // BATCHES >= m for m in (1, 2))
        factor = 0.2 + 0.8 * i / 15 if i < 15 else 1.0
        assert lr == pytest.approx(regular * factor, rel=1e-9)


CASES = {
    "step_int": (dict(policy="step", step=2, gamma=0.3), lambda n: [(ts.StepLR(n(), 2, 0.3), True)]),
    "exp_by_iter": (dict(policy="Exp", gamma=0.95, by_epoch=False),
                    lambda n: [(ts.ExponentialLR(n(), 0.95), False)]),
    "poly": (dict(policy="poly", power=0.9, by_epoch=False),
             lambda n: [(ts.PolynomialLR(n(), TOTAL, 0.9), False)]),
    "poly_min_lr": (dict(policy="poly", power=0.9, min_lr=1e-3, by_epoch=False,
                         warmup="constant", warmup_iters=4, warmup_ratio=0.5),
                    lambda n: [(ts.ConstantLR(n(), 0.5, 4), False), (PolyLR(n(), TOTAL, 0.9, 1e-3), False)]),
    "cosine_by_epoch_min_lr": (dict(policy="cosine", min_lr=1e-3),
                               lambda n: [(ts.CosineAnnealingLR(n(), EPOCHS, 1e-3), True)]),
    "cosine_ratio": (dict(policy="cosine", min_lr_ratio=0.01, by_epoch=False),
                     lambda n: [(ts.CosineAnnealingLR(n(), TOTAL, LR * 0.01), False)]),
    "linear_ratio": (dict(policy="LinearAnnealing", min_lr_ratio=0.1, by_epoch=False),
                     lambda n: [(ts.LinearLR(n(), 1.0, 0.1, TOTAL), False)]),
    "exp_warmup": (dict(policy="fixed", warmup="exp", warmup_iters=6, warmup_ratio=0.01),
                   lambda n: [(ExponentialWarmupLR(n(), 0.01, 6), False)]),
    "warmup_by_epoch": (dict(policy="fixed", warmup="linear", warmup_iters=1, warmup_by_epoch=True),
                        lambda n: [(ts.LinearLR(n(), 0.1, 1.0, BATCHES), False)]),
    "onecycle": (dict(policy="OneCycle", max_lr=0.5, pct_start=0.25, three_phase=True),
                 lambda n: [(ts.OneCycleLR(n(), 0.5, total_steps=TOTAL, pct_start=0.25,
                                           three_phase=True, cycle_momentum=False), False)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_policy_equals_its_torch_schedulers(tmp_path, case):
    hook_args, build = CASES[case]
    expected, _ = torch_reference(build)
    assert run_lrs(tmp_path, **hook_args) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_mmcv_closed_forms_for_exp_warmup_and_poly_min_lr(tmp_path):
    lrs = run_lrs(tmp_path, policy="poly", power=2.0, min_lr=0.01, by_epoch=False, warmup="exp",
                  warmup_iters=5, warmup_ratio=0.1)
    for i, lr in enumerate(lrs):
        regular = 0.01 + (LR - 0.01) * (1 - i / TOTAL) ** 2
        factor = 0.1 ** (1 - i / 5) if i < 5 else 1.0
        assert lr == pytest.approx(regular * factor, rel=1e-9)


def test_iteration_based_run(tmp_path):
    record = Record()
    make_runner(tmp_path, [LrUpdaterHook(policy="cosine", by_epoch=False), record],
                max_iters=25).train()
    expected, _ = torch_reference(lambda n: [(ts.CosineAnnealingLR(n(), 25), False)], steps=25)
    assert [lr[0] for lr in record.lrs] == pytest.approx(expected, rel=1e-12)


def test_resume_in_the_middle_of_a_run_continues_the_same_schedule(tmp_path):
    every_7 = {"type": "CheckpointHook", "interval": 7, "by_epoch": False}

    def hooks():
        return [LrUpdaterHook(policy="cosine", by_epoch=False, warmup="linear", warmup_iters=9),
                MomentumUpdaterHook(policy="cosine", min_momentum=0.5, by_epoch=True), Record()]

    full_hooks = hooks()
    full = make_runner(tmp_path / "full", full_hooks, checkpoint=every_7)
    full.train()
    resumed_hooks = hooks()
    resumed = make_runner(tmp_path / "resumed", resumed_hooks,
                          resume=tmp_path / "full" / "iter_14.pth")
    resumed.train()
    assert resumed_hooks[2].lrs == full_hooks[2].lrs[14:]
    assert resumed_hooks[2].momenta == full_hooks[2].momenta[14:]
    for a, b in zip(full.model.parameters(), resumed.model.parameters()):
        assert torch.equal(a, b)


def test_onecycle_lr_and_momentum_equal_torch_onecycle_with_cycle_momentum(tmp_path):
    record = Record()
    make_runner(tmp_path, [LrUpdaterHook(policy="onecycle", max_lr=0.5),
                           MomentumUpdaterHook(policy="OneCycle", base_momentum=0.8,
                                               max_momentum=0.95), record]).train()
    expected_lr, expected_momentum = torch_reference(lambda n: [(ts.OneCycleLR(
        n(), 0.5, total_steps=TOTAL, base_momentum=0.8, max_momentum=0.95), False)])
    assert [lr[0] for lr in record.lrs] == pytest.approx(expected_lr, rel=1e-12)
    assert [m[0] for m in record.momenta] == pytest.approx(expected_momentum, rel=1e-12)


def test_momentum_of_adam_betas_follows_mmcv_cosine_by_epoch_and_step(tmp_path):
    record = Record()
    make_runner(tmp_path, [MomentumUpdaterHook(policy="CosineAnnealing", min_momentum_ratio=0.5),
                           record], optimizer={"type": "Adam", "lr": 0.01}).train()
    for i, (beta,) in enumerate(record.momenta):
        target = 0.9 * 0.5
        expected = target + (0.9 - target) / 2 * (math.cos(math.pi * (i // BATCHES) / EPOCHS) + 1)
        assert beta == pytest.approx(expected, rel=1e-12)
    record = Record()
    make_runner(tmp_path, [MomentumUpdaterHook(policy="step", step=[1], gamma=0.5,
                                               min_momentum=0.5, warmup="linear", warmup_iters=4,
                                               warmup_ratio=0.9), record]).train()
    for i, (momentum,) in enumerate(record.momenta):
        regular = 0.9 if i < BATCHES else 0.5  # 0.45, floored at min_momentum
        factor = 1 - (1 - i / 4) * 0.1 if i < 4 else 1.0  # mmcv divides by the warm-up factor
        assert momentum == pytest.approx(regular / factor, rel=1e-12)


def test_mmcv_policy_class_names_are_registered():
    assert HOOKS.build({"type": "StepLrUpdaterHook", "step": [8, 11]}).args == \
        {"step": [8, 11], "gamma": 0.1}
    assert HOOKS.build({"type": "CosineAnnealingLrUpdaterHook", "min_lr": 0}).policy == "cosine"
    assert HOOKS.build({"type": "OneCycleMomentumUpdaterHook"}).policy == "onecycle"


@pytest.mark.parametrize("kwargs, message", [
    (dict(policy="cyclic"), "not supported; accepted: fixed, step"),
    (dict(policy="step"), "needs ['step']"),
    (dict(policy="step", step=[3, 1]), "increasing list"),
    (dict(policy="step", step=2, min_lr=1e-5), "unknown argument(s) ['min_lr']"),
    (dict(policy="cosine", min_lr=0, min_lr_ratio=0.1), "not both"),
    (dict(policy="onecycle", max_lr=1, warmup="linear", warmup_iters=3), "remove warmup"),
    (dict(policy="onecycle", max_lr=1, by_epoch=True), "by_epoch must be False"),
    (dict(policy="fixed", warmup="cosine", warmup_iters=3), "warmup must be one of"),
    (dict(policy="fixed", warmup="linear"), "warmup_iters (with warmup='linear') must be an int >= 1"),
    (dict(policy="fixed", warmup="linear", warmup_iters=3, warmup_ratio=0), "warmup_ratio"),
])
def test_bad_configs_are_config_errors_at_construction(kwargs, message):
    with pytest.raises(ConfigError) as info:
        LrUpdaterHook(**kwargs)
    assert message in str(info.value)


def test_errors_that_need_the_run_come_before_the_first_iteration(tmp_path):
    runner = make_runner(tmp_path, [LrUpdaterHook(policy="step", step=2)], max_iters=12)
    with pytest.raises(HookError, match="needs an epoch-based run") as info:
        runner.train()
    assert isinstance(info.value.__cause__, ConfigError) and runner.iter == 0
    runner = make_runner(tmp_path, [MomentumUpdaterHook(policy="cosine")],
                         optimizer={"type": "Adagrad", "lr": 0.1})
    with pytest.raises(HookError, match="neither 'momentum' nor 'betas'"):
        runner.train()
    assert runner.iter == 0
    opt_groups = {"type": "SGD", "lr": 0.1}
    runner = make_runner(tmp_path, [LrUpdaterHook(policy="cosine", min_lr_ratio=0.1)],
                         optimizer=opt_groups)
    runner.optimizer.add_param_group({"params": [torch.nn.Parameter(torch.zeros(1))], "lr": 0.5})
    with pytest.raises(HookError, match="give min_lr"):
        runner.train()
