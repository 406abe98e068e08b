"""hookline.compat.mmengine.optim: MMEngine's parameter schedulers, alone and in a Runner."""

from __future__ import annotations

import pytest
import torch

from hookline import ConfigError, Hook
from hookline.compat.mmengine.optim import (
    CosineAnnealingLR,
    CosineAnnealingMomentum,
    LinearMomentum,
    MultiStepLR,
    OptimWrapper,
    PolyLR,
    StepLR,
    _ParamScheduler,
)
from hookline.compat.mmengine.registry import PARAM_SCHEDULERS

from ..conftest import make_runner


def _optimizer(cls=torch.optim.SGD, **kwargs):
    return cls([torch.nn.Parameter(torch.zeros(1))], lr=1.0, **kwargs)


@pytest.mark.parametrize(("ours", "kwargs", "theirs", "their_kwargs"), [
    (CosineAnnealingLR, {"T_max": 5, "eta_min": 0.01}, "CosineAnnealingLR",
     {"T_max": 5, "eta_min": 0.01}),
    (StepLR, {"step_size": 2, "gamma": 0.5}, "StepLR", {"step_size": 2, "gamma": 0.5}),
    (PolyLR, {"power": 2.0, "end": 6}, "PolynomialLR", {"power": 2.0, "total_iters": 5}),
])
def test_values_match_torchs_equivalent_schedulers(ours, kwargs, theirs, their_kwargs):
    mine, reference = _optimizer(), _optimizer()
    scheduler = ours(mine, **kwargs)
    torch_scheduler = getattr(torch.optim.lr_scheduler, theirs)(reference, **their_kwargs)
    for _ in range(12):
        assert mine.param_groups[0]["lr"] == pytest.approx(reference.param_groups[0]["lr"])
        mine.step()
        reference.step()
        scheduler.step()
        torch_scheduler.step()
    assert isinstance(scheduler, _ParamScheduler) and scheduler.get_last_value()


def test_momentum_schedulers_move_adams_beta1_and_state_round_trips():
    optimizer = _optimizer(torch.optim.Adam)
    scheduler = LinearMomentum(OptimWrapper(optimizer), start_factor=0.5, end=3)
    assert optimizer.param_groups[0]["betas"] == (0.45, 0.999)
    state = scheduler.state_dict()
    assert "optimizer" not in state and state["last_step"] == 0
    again = LinearMomentum(optimizer, start_factor=0.5, end=3, last_step=0)
    again.load_state_dict(state)
    assert again.last_step == 0 and again.base_values == [0.9]


def test_bad_windows_and_epoch_conversion():
    with pytest.raises(ConfigError, match="end must be larger than begin"):
        StepLR(_optimizer(), step_size=1, begin=3, end=3)
    with pytest.raises(ConfigError, match="no 'initial_lr'"):
        StepLR(_optimizer(), step_size=1, last_step=4)
    scheduler = MultiStepLR.build_iter_from_epoch(_optimizer(), milestones=[2], begin=1, end=4,
                                                  epoch_length=10)
    assert (scheduler.begin, scheduler.end, scheduler.milestones) == (10, 40, {20: 1})
    assert not scheduler.by_epoch
    assert PARAM_SCHEDULERS.get("LinearLR").__module__.endswith("optim.scheduler")


def test_mmengine_schedulers_chain_in_a_runner(tmp_path):
    lrs = []

    class Lr(Hook):
        def before_train_iter(self, runner, batch_idx, data_batch=None):
            lrs.append(runner.optimizer.param_groups[0]["lr"])

    runner = make_runner(tmp_path, hooks=[Lr()], optimizer={"type": "SGD", "lr": 1.0},
                         param_scheduler=[
                             {"type": "mmengine.LinearLR", "start_factor": 0.25, "end": 4,
                              "by_epoch": False},
                             {"type": "mmengine.MultiStepLR", "milestones": [1], "gamma": 0.1,
                              "by_epoch": True}])
    runner.train()
    assert lrs[:5] == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0])
    assert lrs[8:10] == pytest.approx([0.1, 0.1])  # the per-epoch milestone after epoch 1


def test_mmengine_schedulers_step_every_iteration_while_gradients_accumulate(tmp_path):
    """MMEngine steps its schedulers after every iteration, accumulated or not, so a window
    of 12 iterations stays 12 iterations; torch's step once per optimizer step (Lightning's
    rule), so the same window spans 12 optimizer steps."""
    def lrs_with(scheduler_type):
        lrs = []

        class Lr(Hook):
            def before_train_iter(self, runner, batch_idx, data_batch=None):
                lrs.append(runner.optimizer.param_groups[0]["lr"])

        make_runner(tmp_path / scheduler_type, hooks=[Lr()], max_epochs=None, max_iters=12,
                    optimizer=None, optim_wrapper={"optimizer": {"type": "SGD", "lr": 0.1},
                                                   "accumulative_counts": 3},
                    param_scheduler={"type": scheduler_type, "start_factor": 0.25,
                                     "total_iters": 4, "by_epoch": False}
                    if scheduler_type == "LinearLR" else
                    {"type": scheduler_type, "start_factor": 0.25, "end": 4, "by_epoch": False}
                    ).train()
        return lrs

    assert lrs_with("mmengine.LinearLR")[:6] == pytest.approx(
        [0.025, 0.05, 0.075, 0.1, 0.1, 0.1])
    assert lrs_with("LinearLR")[:7] == pytest.approx(
        [0.025, 0.025, 0.025, 0.04375, 0.04375, 0.04375, 0.0625])


def test_a_momentum_scheduler_on_an_optimizer_without_momentum_is_one_config_error():
    """MMEngine: "optimizer must support momentum"; a KeyError from inside hookline before."""
    optimizer = torch.optim.Adagrad(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(ConfigError, match="Adagrad.*has no 'momentum'.*SGD's momentum or "
                                          "Adam's betas"):
        CosineAnnealingMomentum(optimizer, T_max=4)
