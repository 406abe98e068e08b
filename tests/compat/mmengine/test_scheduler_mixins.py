"""LRSchedulerMixin / MomentumSchedulerMixin: a project's _ParamScheduler made into an lr or
momentum scheduler the way mmdet makes QuadraticWarmupLR, alone and in a Runner."""

from __future__ import annotations

import pytest
import torch

from hookline import ConfigError, Hook
from hookline.compat.mmengine.optim import LinearLR, LinearParamScheduler, StepMomentum
from hookline.compat.mmengine.optim.scheduler.lr_scheduler import LRSchedulerMixin
from hookline.compat.mmengine.optim.scheduler.momentum_scheduler import MomentumSchedulerMixin
from hookline.compat.mmengine.optim.scheduler.param_scheduler import INF, _ParamScheduler
from hookline.compat.mmengine.registry import PARAM_SCHEDULERS as MMENGINE_PARAM_SCHEDULERS
from hookline.compat.mmengine.registry import Registry

from ..conftest import make_runner

PARAM_SCHEDULERS = Registry("parameter scheduler", parent=MMENGINE_PARAM_SCHEDULERS,
                            scope="mixindet")


@PARAM_SCHEDULERS.register_module()
class QuadraticWarmupParamScheduler(_ParamScheduler):
    """mmdet's pattern: value = base * (t + 1)^2 / T^2 over the window, built by increments."""

    def __init__(self, optimizer, param_name, begin=0, end=INF, last_step=-1, by_epoch=True,
                 verbose=False):
        if end >= INF:
            raise ValueError("end must be given")
        self.total_iters = end - begin
        super().__init__(optimizer=optimizer, param_name=param_name, begin=begin, end=end,
                         last_step=last_step, by_epoch=by_epoch, verbose=verbose)

    def _get_value(self):
        increments = [base * (2 * self.last_step + 1) / self.total_iters ** 2
                      for base in self.base_values]
        if self.last_step == 0:
            return increments
        return [group[self.param_name] + inc
                for inc, group in zip(increments, self.optimizer.param_groups)]


@PARAM_SCHEDULERS.register_module()
class QuadraticWarmupLR(LRSchedulerMixin, QuadraticWarmupParamScheduler):
    pass


@PARAM_SCHEDULERS.register_module()
class QuadraticWarmupMomentum(MomentumSchedulerMixin, QuadraticWarmupParamScheduler):
    pass


def quadratic(base, step, total):
    return base * min(step + 1, total) ** 2 / total ** 2


def test_the_lr_form_schedules_lr_by_the_formula():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.4, momentum=0.9)
    scheduler = QuadraticWarmupLR(opt, end=5, by_epoch=False)
    assert scheduler.param_name == "lr" and isinstance(scheduler, QuadraticWarmupParamScheduler)
    seen = []
    for _ in range(7):
        seen.append(opt.param_groups[0]["lr"])
        scheduler.step()
    assert seen == pytest.approx([quadratic(0.4, t, 5) for t in range(7)])
    assert opt.param_groups[0]["momentum"] == 0.9  # only lr is scheduled


def test_the_momentum_form_schedules_sgd_momentum_and_adams_beta1():
    sgd = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1, momentum=0.8)
    QuadraticWarmupMomentum(sgd, end=2)
    assert sgd.param_groups[0]["momentum"] == pytest.approx(0.2) and sgd.param_groups[0]["lr"] == 0.1
    adam = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], betas=(0.8, 0.99))
    scheduler = QuadraticWarmupMomentum(adam, end=2)
    assert adam.param_groups[0]["betas"] == pytest.approx((0.2, 0.99))
    scheduler.step()
    assert adam.param_groups[0]["betas"] == pytest.approx((0.8, 0.99))
    with pytest.raises(ConfigError, match="has no 'momentum'"):
        QuadraticWarmupMomentum(torch.optim.Adagrad([torch.nn.Parameter(torch.zeros(1))]), end=2)


def test_the_built_in_forms_are_made_the_same_way():
    assert LinearLR.__mro__[1:3] == (LRSchedulerMixin, LinearParamScheduler)
    assert issubclass(StepMomentum, MomentumSchedulerMixin)


class Rates(Hook):
    priority = "LOWEST"

    def __init__(self):
        self.lrs = []

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self.lrs.append(runner.optimizer.param_groups[0]["lr"])


def test_a_configured_quadratic_warmup_lr_trains_with_the_formulas_rates(tmp_path):
    rates = Rates()
    start = torch.nn.Linear(4, 2)
    initial = [p.detach().clone() for p in start.parameters()]
    runner = make_runner(tmp_path, model=start, hooks=[rates], param_scheduler=[
        {"type": "mixindet.QuadraticWarmupLR", "end": 4, "by_epoch": False}])
    runner.train()
    assert len(rates.lrs) == 16  # 8 batches x 2 epochs
    assert rates.lrs == pytest.approx([quadratic(0.1, t, 4) for t in range(16)])
    assert any(not torch.equal(a, b.detach()) for a, b in zip(initial, start.parameters()))
