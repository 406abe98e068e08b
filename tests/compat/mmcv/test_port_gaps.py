"""mmcv 1.x ports that used to go wrong: custom LR policies (``get_lr``), optimizer hooks that
do the update through ``super()`` or ``clip_grads``, mmcv's gradient accumulation."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import ConfigError
from hookline.compat.mmcv.runner import (
    HOOKS,
    Fp16OptimizerHook,
    GradientCumulativeOptimizerHook,
    Hook,
    LrUpdaterHook,
    OptimizerHook,
)
from hookline.compat.mmcv.runner.hooks.optimizer import HookDrivenOptimWrapper
from hookline.compat.mmcv.runner.runner_view import runner_view
from hookline.core.errors import HookError
from hookline.hooks import LrUpdaterHook as NativeLrUpdaterHook

from ..conftest import make_runner, toy_data


class LrRecorder(Hook):
    """Reads the lr each iteration trains with (mmcv's lr hook runs first, at VERY_HIGH)."""

    def __init__(self):
        self.lrs = []

    def before_train_iter(self, runner):
        self.lrs.append((runner.epoch, runner.iter, runner.current_lr()[0]))


class Halving(LrUpdaterHook):
    """A project's policy, mmcv's way: only ``get_lr``."""

    def __init__(self, gamma=0.5, **kwargs):
        self.gamma = gamma
        super().__init__(**kwargs)

    def get_lr(self, runner, base_lr):
        return base_lr * self.gamma ** (runner.epoch if self.by_epoch else runner.iter)


class InvSqrt(NativeLrUpdaterHook):
    """The same through hookline's own class."""

    def get_lr(self, runner, base_lr):
        return base_lr / (1 + runner.iter) ** 0.5


def warmed(regular, i, warmup_iters, ratio, kind="linear"):
    """mmcv's warm-up of ``regular`` at iteration ``i``."""
    if i >= warmup_iters:
        return regular
    if kind == "constant":
        return regular * ratio
    return regular * (1 - (1 - i / warmup_iters) * (1 - ratio))


def test_a_get_lr_subclass_sets_the_lr_by_epoch_as_mmcv_does(tmp_path):
    HOOKS.register_module(module=Halving, force=True)
    recorder = LrRecorder()
    runner = make_runner(tmp_path, max_epochs=3,
                         hooks=[dict(type="mmcv.Halving", gamma=0.5, by_epoch=True), recorder])
    runner.train()
    hook = next(h for h in runner.hooks if isinstance(h, Halving))
    assert hook.mmcv_driven and hook.priority == "VERY_HIGH" and hook.base_lr == [0.1]
    assert hook.get_triggered_stages() == ["before_run", "before_train", "before_train_epoch",
                                           "before_train_iter"]
    assert sorted({(e, round(lr, 6)) for e, _, lr in recorder.lrs}) == [
        (0, 0.1), (1, 0.05), (2, 0.025)]


def test_by_iteration_with_linear_warmup_and_hooklines_own_class(tmp_path):
    recorder = LrRecorder()
    hook = InvSqrt(by_epoch=False, warmup="linear", warmup_iters=4, warmup_ratio=0.25)
    make_runner(tmp_path, max_epochs=1, hooks=[hook, recorder]).train()
    expected = [warmed(0.1 / (1 + i) ** 0.5, i, 4, 0.25) for i in range(8)]
    assert [lr for _, _, lr in recorder.lrs] == pytest.approx(expected)


def test_by_epoch_warmup_counts_iterations_and_warmup_by_epoch_uses_the_loader(tmp_path):
    recorder = LrRecorder()
    hook = Halving(by_epoch=True, warmup="constant", warmup_iters=3, warmup_ratio=0.5)
    make_runner(tmp_path, max_epochs=2, hooks=[hook, recorder]).train()
    regular = [0.1] * 8 + [0.05] * 8
    assert [lr for _, _, lr in recorder.lrs] == pytest.approx(
        [warmed(r, i, 3, 0.5, "constant") for i, r in enumerate(regular)])

    recorder = LrRecorder()
    hook = Halving(by_epoch=False, gamma=1.0, warmup="linear", warmup_iters=1,
                   warmup_by_epoch=True, warmup_ratio=0.5)
    assert hook.warmup_epochs == 1 and hook.warmup_iters is None  # mmcv's attributes
    make_runner(tmp_path / "b", max_epochs=2, hooks=[hook, recorder]).train()
    assert hook.warmup_iters == 8
    assert [lr for _, _, lr in recorder.lrs] == pytest.approx(
        [warmed(0.1, i, 8, 0.5) for i in range(16)])


def test_a_warmup_only_override_keeps_the_policys_mmcv_get_lr(tmp_path):
    """mmdet's YOLOXLrUpdaterHook pattern: a per-policy class, its own warm-up, mmcv's
    attributes (``min_lr_ratio``) and ``runner.data_loader`` in ``get_lr``."""
    seen = []

    class SquaredWarmup(HOOKS.get("CosineAnnealingLrUpdaterHook")):
        def get_warmup_lr(self, cur_iters):
            k = self.warmup_ratio * ((cur_iters + 1) / self.warmup_iters) ** 2
            return [lr * k for lr in self.base_lr]

    class Flat(HOOKS.get("CosineAnnealingLrUpdaterHook")):
        def get_lr(self, runner, base_lr):
            seen.append((len(runner.data_loader), self.min_lr_ratio))
            return super().get_lr(runner, base_lr)

    recorder = LrRecorder()
    hook = SquaredWarmup(by_epoch=False, min_lr_ratio=0.1, warmup="exp", warmup_iters=4,
                         warmup_ratio=1.0)
    make_runner(tmp_path, max_epochs=1, hooks=[hook, recorder]).train()
    cosine = [0.01 + (0.1 - 0.01) / 2 * (1 + torch.cos(torch.tensor(torch.pi * i / 8)).item())
              for i in range(8)]
    expected = [0.1 * ((i + 1) / 4) ** 2 if i < 4 else cosine[i] for i in range(8)]
    assert [lr for _, _, lr in recorder.lrs] == pytest.approx(expected)

    make_runner(tmp_path / "b", max_epochs=1, hooks=[Flat(by_epoch=True, min_lr_ratio=0.5)]).train()
    assert seen[0] == (8, 0.5)


def test_resume_keeps_base_lr_and_continues_the_schedule(tmp_path):
    class Stop(Hook):
        def after_train_epoch(self, runner):
            if runner.epoch == 0:
                runner.save_checkpoint(runner.work_dir, filename_tmpl="mid_{}.pth")

    full = LrRecorder()
    make_runner(tmp_path / "a", max_epochs=2, hooks=[Halving(by_epoch=False, gamma=0.9), full,
                                                     Stop()]).train()
    resumed = LrRecorder()
    hook = Halving(by_epoch=False, gamma=0.9)
    make_runner(tmp_path / "b", max_epochs=2, hooks=[hook, resumed],
                optimizer={"type": "SGD", "lr": 0.5},  # base_lr comes from the checkpoint
                resume=str(tmp_path / "a" / "mid_1.pth")).train()
    assert hook.base_lr == [0.1]
    assert [r[:2] for r in resumed.lrs] == [r[:2] for r in full.lrs[8:]]
    assert [r[2] for r in resumed.lrs] == pytest.approx([r[2] for r in full.lrs[8:]])


def test_lr_updater_mistakes_are_config_errors_and_policy_hooks_are_unchanged(tmp_path):
    class OneCycleWarmup(HOOKS.get("OneCycleLrUpdaterHook")):
        def get_warmup_lr(self, cur_iters):
            return self.regular_lr

    with pytest.raises(ConfigError, match="onecycle"):
        OneCycleWarmup(max_lr=0.1)
    hook = HOOKS.build(dict(type="StepLrUpdaterHook", step=[1]))
    assert not hook.mmcv_driven and hook.priority == "LOW"
    assert hook.triggered_stages() == ["before_run", "before_train", "after_train_iter",
                                       "after_train_epoch"]
    with pytest.raises(HookError) as err:
        make_runner(tmp_path, optimizer=None, model=_SelfStepping(),
                    hooks=[Halving(by_epoch=True)]).train()
    assert isinstance(err.value.original, ConfigError)


class _SelfStepping(torch.nn.Linear):
    """A model that updates itself (no Runner optimizer)."""

    def __init__(self):
        super().__init__(4, 2)

    def train_step(self, batch, optim_wrapper=None):
        return {"loss": torch.nn.functional.cross_entropy(self(batch[0]), batch[1])}


# -- optimizer hooks ----------------------------------------------------------------------------

def reference(runner, *, epochs=2, reg=0.0, clip=None, value_clip=None, cumulative=1):
    """The weights mmcv's hooks give, by hand (``runner``'s initial weights)."""
    model = torch.nn.Linear(4, 2)
    model.load_state_dict(runner.model.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    max_iters = epochs * 8
    remainder = max_iters % cumulative
    i = 0
    for _ in range(epochs):
        for x, y in DataLoader(toy_data(), batch_size=8):
            loss = torch.nn.functional.cross_entropy(model(x), y) + reg * model.weight.pow(2).sum()
            if cumulative == 1:
                optimizer.zero_grad()
            loss = loss / (cumulative if i < max_iters - remainder else remainder)
            loss.backward()
            if (i + 1) % cumulative == 0 or i + 1 == max_iters:
                if clip:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), **clip)
                if value_clip:
                    torch.nn.utils.clip_grad_value_(model.parameters(), value_clip)
                optimizer.step()
                if cumulative > 1:
                    optimizer.zero_grad()
            i += 1
    return model.weight.detach()


class RegOptimizerHook(OptimizerHook):
    def after_train_iter(self, runner):
        runner.outputs["loss"] = runner.outputs["loss"] + 0.01 * runner.model.weight.pow(2).sum()
        super().after_train_iter(runner)


class ValueClipOptimizerHook(OptimizerHook):
    def clip_grads(self, params):
        params = [p for p in params if p.requires_grad and p.grad is not None]
        torch.nn.utils.clip_grad_value_(params, 0.01)


def test_a_subclass_calling_super_after_train_iter_gets_mmcvs_update(tmp_path):
    runner = make_runner(tmp_path, hooks=[RegOptimizerHook(grad_clip=dict(max_norm=0.05))])
    expected = reference(runner, reg=0.01, clip=dict(max_norm=0.05))
    runner.train()
    assert isinstance(runner.optim_wrapper, HookDrivenOptimWrapper)
    assert torch.allclose(runner.model.weight, expected, atol=1e-6)
    buffer = runner_view(runner).log_buffer
    assert len(buffer.val_history["grad_norm"]) == 16 and buffer.n_history["grad_norm"][0] == 8


def test_an_overridden_clip_grads_is_called(tmp_path):
    runner = make_runner(tmp_path, hooks=[ValueClipOptimizerHook(grad_clip=dict(max_norm=1e9))])
    expected = reference(runner, value_clip=0.01)
    runner.train()
    assert torch.allclose(runner.model.weight, expected, atol=1e-6)
    assert "grad_norm" not in runner_view(runner).log_buffer.val_history  # it returned None
    # without grad_clip mmcv never calls clip_grads: hookline's wrapper steps
    hook = ValueClipOptimizerHook()
    assert not hook.drives_update() and "after_train_iter" not in hook.get_triggered_stages()


def test_the_plain_hook_logs_the_wrappers_grad_norm_to_the_log_buffer(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1,
                         hooks=[HOOKS.build(dict(type="OptimizerHook", grad_clip=dict(max_norm=1)))])
    runner.train()
    assert runner.optim_wrapper.clip_grad["max_norm"] == 1  # hookline's wrapper clipped
    norms = runner_view(runner).log_buffer.val_history["grad_norm"]
    assert len(norms) == 8 and float(norms[-1]) == pytest.approx(
        runner.message_hub.get_scalar("train/grad_norm").current())


def test_gradient_accumulation_groups_the_runs_iterations_as_mmcv(tmp_path):
    runner = make_runner(tmp_path, hooks=[
        dict(type="mmcv.GradientCumulativeOptimizerHook", cumulative_iters=3)])
    expected = reference(runner, cumulative=3)  # 16 iterations: 5 groups of 3, then 1
    runner.train()
    hook = next(h for h in runner.hooks if isinstance(h, GradientCumulativeOptimizerHook))
    assert (hook.divisible_iters, hook.remainder_iters) == (15, 1)
    assert torch.allclose(runner.model.weight, expected, atol=1e-6)

    class Scaled(GradientCumulativeOptimizerHook):
        def after_train_iter(self, runner):
            runner.outputs["loss"] = runner.outputs["loss"] * 1.0
            super().after_train_iter(runner)

    runner = make_runner(tmp_path / "b", hooks=[Scaled(cumulative_iters=4,
                                                       grad_clip=dict(max_norm=0.05))])
    expected = reference(runner, cumulative=4, clip=dict(max_norm=0.05))
    runner.train()
    assert torch.allclose(runner.model.weight, expected, atol=1e-6)
    assert len(runner_view(runner).log_buffer.val_history["grad_norm"]) == 4
    with pytest.raises(ConfigError, match="cumulative_iters"):
        GradientCumulativeOptimizerHook(cumulative_iters=0)


def test_an_fp16_subclass_doing_the_update_is_a_config_error(tmp_path):
    class Mine(Fp16OptimizerHook):
        def after_train_iter(self, runner):
            pass

    with pytest.raises(HookError) as err:
        make_runner(tmp_path, hooks=[Mine()]).train()
    assert isinstance(err.value.original, ConfigError)
    assert "after_train_iter" in str(err.value.original)
    make_runner(tmp_path / "b", max_epochs=1, hooks=[Fp16OptimizerHook(loss_scale=512.0)]).train()
