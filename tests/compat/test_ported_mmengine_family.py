"""Hooks written in the style of MMEngine, mmdet 3.x, mmpretrain, mmyolo and mmpose, ported by
the import rule alone (``tests/compat/projects``), each checked for its effect in a Runner."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch.utils.data import DataLoader
from toydet.registry import HOOKS as DET_HOOKS
from toyengine.iter_timer_hook import IterTimerHook as Ported
from toypretrain.registry import HOOKS as PRETRAIN_HOOKS

import hookline.hooks
from hookline import HOOKS, Hook, HookError, Runner
from hookline.compat.mmengine.hooks import EMAHook as MMEngineEMAHook
from hookline.compat.mmengine.registry import HOOKS as MMENGINE_HOOKS
from hookline.compat.mmengine.runner import Runner as CompatRunner

from .conftest import make_runner, toy_data


class Record(Hook):
    """Records what the test compares against (lowest priority: after every other hook)."""

    priority = "LOWEST"

    def __init__(self):
        self.losses, self.weights, self.lrs, self.inputs = [], [], [], []

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self.lrs.append(runner.optimizer.param_groups[0]["lr"])
        self.inputs.append((runner.epoch, data_batch[0].abs().mean().item()))

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self.losses.append(float(outputs["loss"].detach()))
        self.weights.append({k: v.detach().clone() for k, v in runner.model.named_parameters()})


# -- MMEngine's own kind of hook file ----------------------------------------------------------
def test_a_port_registering_a_builtin_name_neither_fails_nor_replaces_the_builtin(tmp_path):
    assert MMENGINE_HOOKS.get("IterTimerHook") is Ported
    assert HOOKS.get("IterTimerHook") is hookline.hooks.IterTimerHook
    assert HOOKS.get("mmengine.IterTimerHook") is Ported
    runner = make_runner(tmp_path, hooks=[{"type": "mmengine.IterTimerHook"}],
                         val_dataloader=DataLoader(toy_data(), batch_size=32),
                         default_hooks={"timer": None})
    assert type(runner.hooks.by_key().get("timer")) is type(None)
    runner.train()
    hub = runner.message_hub
    assert hub.get_info("eta") == 0.0  # the ETA after the last iteration
    assert len(hub.get_scalar("val/time")) == 4  # 2 batches x 2 validations
    assert len(hub.get_scalar("train/data_time")) == 16  # floats: the long history, as MMEngine
    fresh = make_runner(tmp_path / "other", default_hooks={"timer": {"type": "IterTimerHook"}})
    assert type(fresh.hooks.by_key()["timer"]) is hookline.hooks.IterTimerHook


# -- mmdet 3.x ---------------------------------------------------------------------------------
def test_a_project_registry_is_a_scoped_child_found_by_name_and_by_scope():
    assert DET_HOOKS.scope == "toydet" and DET_HOOKS.parent is MMENGINE_HOOKS
    set_epoch = DET_HOOKS.get("SetEpochInfoHook")  # imports toydet.engine.hooks (locations)
    assert set_epoch.__module__ == "toydet.engine.hooks.set_epoch_info_hook"
    assert DET_HOOKS.get("CheckpointHook") is MMENGINE_HOOKS.get("CheckpointHook")  # the parent's
    assert HOOKS.get("toydet.SetEpochInfoHook") is set_epoch
    assert HOOKS.get("SetEpochInfoHook") is set_epoch  # one scope has it: found without one
    assert type(HOOKS.build({"type": "CheckInvalidLossHook"})) is hookline.hooks.CheckInvalidLossHook
    assert HOOKS.get("toydet.CheckInvalidLossHook").__module__.startswith("toydet")


def test_mmdet_hooks_set_the_epoch_and_stop_on_an_invalid_loss(tmp_path):
    runner = make_runner(tmp_path, model={"type": "toydet.ToyDetector"}, loss_fn=None, max_epochs=3,
                         hooks=[{"type": "SetEpochInfoHook"},
                                {"type": "toydet.CheckInvalidLossHook", "interval": 1}])
    assert type(runner.model).__name__ == "ToyDetector"
    runner.train()
    assert runner.model.epochs_seen == [0, 1, 2]

    broken = make_runner(tmp_path / "nan", model={"type": "toydet.ToyDetector"}, loss_fn=None,
                         hooks=[{"type": "toydet.CheckInvalidLossHook", "interval": 1}])

    @broken.on("before_train_iter")
    def poison(runner, batch_idx, data_batch=None):
        if runner.iter == 5:
            with torch.no_grad():
                runner.model.head.weight.fill_(float("nan"))

    with pytest.raises(HookError, match="CheckInvalidLossHook failed at after_train_iter") as info:
        broken.train()
    assert isinstance(info.value.__cause__, AssertionError) and broken.iter == 5


def test_mean_teacher_follows_the_student(tmp_path):
    record = Record()
    runner = make_runner(tmp_path, model={"type": "toydet.ToyTeacherStudent"}, loss_fn=None,
                         max_epochs=1, hooks=[{"type": "MeanTeacherHook", "momentum": 0.2},
                                              record])
    initial = runner.model.student.weight.detach().clone()
    runner.train()
    expected = initial
    for weights in record.weights:
        expected = 0.8 * expected + 0.2 * weights["student.weight"]
    assert torch.allclose(runner.model.teacher.weight, expected, atol=1e-6)
    assert not torch.allclose(runner.model.teacher.weight, runner.model.student.weight)


def test_val_steps_returning_data_samples_reach_metrics_and_the_visualizer(tmp_path):
    def accuracy(samples):
        return sum(s["pred_label"] == s["gt_label"] for s in samples) / len(samples)

    seen = []
    runner = make_runner(tmp_path, model={"type": "toydet.ToyDetector"}, loss_fn=None,
                         val_dataloader=DataLoader(toy_data(), batch_size=16),
                         metrics={"acc": accuracy},
                         hooks=[{"type": "DetVisualizationHook", "draw": True, "interval": 1}])
    runner.on("after_val_iter", lambda r, batch_idx, data_batch, outputs: seen.append(outputs))
    runner.train()
    assert all(isinstance(o, list) and len(o) == 16 for o in seen)
    samples = [s for o in seen[-4:] for s in o]
    assert runner.val_loop.last_metrics["acc"] == pytest.approx(accuracy(samples))
    images = sorted((runner.work_dir / runner.timestamp / "vis_data" / "vis_image").glob("*.png"))
    assert len(images) == 8  # 4 batches x 2 validations, each drawn at its own step


# -- mmpretrain --------------------------------------------------------------------------------
def test_a_project_ema_hook_keeps_its_name_apart_from_the_builtins():
    pretrain_ema = PRETRAIN_HOOKS.get("EMAHook")
    assert pretrain_ema.__module__ == "toypretrain.engine.hooks.ema_hook"
    assert issubclass(pretrain_ema, MMEngineEMAHook)
    assert HOOKS.get("EMAHook") is hookline.hooks.EMAHook
    assert HOOKS.get("toypretrain.EMAHook") is pretrain_ema
    assert MMENGINE_HOOKS.get("EMAHook") is MMEngineEMAHook


def _accuracy(model, data):
    with torch.no_grad():
        return (model(data.tensors[0]).argmax(1) == data.tensors[1]).float().mean().item()


def test_mmpretrain_ema_evaluates_the_average_and_the_original(tmp_path):
    data = toy_data()
    runner = make_runner(tmp_path, val_dataloader=DataLoader(data, batch_size=32),
                         metrics={"acc": "accuracy"}, max_epochs=2,
                         hooks=[{"type": "toypretrain.EMAHook", "momentum": 0.3,
                                 "evaluate_on_origin": True}])
    runner.train()
    hook = next(h for h in runner.hooks.hooks if type(h).__name__ == "EMAHook")
    assert runner.val_loop.last_metrics["acc"] == pytest.approx(_accuracy(hook.ema_model.module, data))
    assert runner.message_hub.latest("val/acc_origin") == pytest.approx(_accuracy(runner.model, data))
    assert not torch.equal(hook.ema_model.module.weight, runner.model.weight)


def test_mmengine_ema_checkpoints_hold_the_average_and_resume_exactly(tmp_path):
    def run(work_dir, epochs, **kwargs):
        return make_runner(work_dir, max_epochs=epochs, hooks=[MMEngineEMAHook(momentum=0.3)],
                           train_dataloader=DataLoader(toy_data(), batch_size=8, shuffle=True),
                           default_hooks={"checkpoint": {"type": "CheckpointHook"}}, **kwargs)

    straight = run(tmp_path / "straight", 3)
    straight.train()
    first = run(tmp_path / "split", 2)
    first.train()
    checkpoint = torch.load(first.work_dir / "epoch_2.pth", weights_only=True)
    ema = next(h for h in first.hooks.hooks if isinstance(h, MMEngineEMAHook))
    assert torch.equal(checkpoint["state_dict"]["weight"], ema.ema_model.module.weight)
    assert torch.equal(checkpoint["ema_state_dict"]["module.weight"], first.model.weight)
    resumed = run(tmp_path / "split", 3, resume="auto")
    resumed.train()
    ema_a = next(h for h in straight.hooks.hooks if isinstance(h, MMEngineEMAHook)).ema_model
    ema_b = next(h for h in resumed.hooks.hooks if isinstance(h, MMEngineEMAHook)).ema_model
    assert torch.equal(straight.model.weight, resumed.model.weight)
    assert torch.equal(ema_a.module.weight, ema_b.module.weight)
    assert int(ema_a.steps) == int(ema_b.steps) == 24


def test_precise_bn_recomputes_the_statistics_with_fixed_weights(tmp_path):
    data = toy_data()
    runner = make_runner(tmp_path, model={"type": "toypretrain.BNClassifier"}, loss_fn=None,
                         max_epochs=1, hooks=[{"type": "PreciseBNHook", "num_samples": 32}])
    runner.train()
    model = runner.model
    with torch.no_grad():
        features = [model.fc1(data.tensors[0][i:i + 8]) for i in range(0, 32, 8)]
    expected_mean = torch.stack([f.mean(0) for f in features]).mean(0)
    expected_var = torch.stack([f.var(0) for f in features]).mean(0)
    assert torch.allclose(model.bn.running_mean, expected_mean, atol=1e-5)
    assert torch.allclose(model.bn.running_var, expected_var, atol=1e-5)


# -- mmyolo ------------------------------------------------------------------------------------
def test_yolov5_scheduler_subclass_without_super_init_sets_the_lr(tmp_path):
    record = Record()
    runner = make_runner(tmp_path, max_epochs=3, hooks=[record], default_hooks={
        "param_scheduler": {"type": "toyyolo.YOLOv5ParamSchedulerHook", "lr_factor": 0.1,
                            "max_epochs": 3, "warmup_epochs": 1, "warmup_mim_iter": 4}})
    hook = runner.hooks.by_key()["param_scheduler"]
    assert type(hook).__name__ == "YOLOv5ParamSchedulerHook" and runner.hooks.priority_of(hook) == 9
    runner.train()

    def fn(epoch):
        return (1 - epoch / 3) * (1.0 - 0.1) + 0.1

    # warm-up over 8 iterations towards the epoch's value; iteration 8 (epoch 1) ends it,
    # then after_train_epoch sets the value of the epoch that just ended
    expected = [0.1 * fn(0) * i / 8 for i in range(8)] + [0.1 * fn(1)] * 8 + [0.1 * fn(1)] * 8
    assert record.lrs == pytest.approx(expected)


class ScaleProbe(torch.nn.Linear):
    use_bbox_aux = False


def test_yolox_mode_switch_rebuilds_the_train_dataloader_from_the_config(tmp_path):
    record = Record()
    loader_cfg = {"dataset": {"type": "toyyolo.ToyYoloDataset", "size": 16,
                              "pipeline": [{"type": "Scale", "factor": 1.0}]}, "batch_size": 4}
    runner = make_runner(tmp_path, model=ScaleProbe(4, 2), max_epochs=4,
                         train_dataloader=loader_cfg, hooks=[
                             {"type": "YOLOXModeSwitchHook", "num_last_epochs": 2,
                              "new_train_pipeline": [{"type": "Scale", "factor": 10.0}]}, record])
    original = runner.train_loop.dataloader
    runner.train()
    scale_by_epoch = {}
    for epoch, scale in record.inputs:
        scale_by_epoch.setdefault(epoch, []).append(scale)
    means = [sum(v) / len(v) for _, v in sorted(scale_by_epoch.items())]
    assert means[2] == pytest.approx(10 * means[0]) and means[3] == pytest.approx(means[2])
    assert means[1] == pytest.approx(means[2])  # switched in epoch 1's before_train_epoch
    assert runner.train_loop.dataloader is not original and runner.model.use_bbox_aux
    assert runner.cfg.train_dataloader.dataset.pipeline[0].factor == 1.0  # deep-copied


# -- mmpose ------------------------------------------------------------------------------------
def test_project_ema_model_class_runs_under_mmengine_ema_hook(tmp_path):
    record = Record()
    runner = make_runner(tmp_path, max_epochs=1, hooks=[
        MMEngineEMAHook(ema_type="toypose.ExpMomentumEMA", momentum=0.01, gamma=10), record])
    runner.train()
    ema = next(h for h in runner.hooks.hooks if isinstance(h, MMEngineEMAHook)).ema_model
    assert type(ema).__module__ == "toypose.models.ema"
    expected = record.weights[0]["weight"]
    for step, weights in enumerate(record.weights[1:], start=1):
        momentum = (1 - 0.01) * math.exp(-float(1 + step) / 10) + 0.01
        expected = (1 - momentum) * expected + momentum * weights["weight"]
    assert torch.allclose(ema.module.weight, expected, atol=1e-6)


def test_sync_norm_hook_is_a_no_op_on_one_process(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    runner = make_runner(tmp_path, model=model, max_epochs=1, hooks=[{"type": "toypose.SyncNormHook"}],
                         val_dataloader=DataLoader(toy_data(), batch_size=32))
    runner.train()
    before = copy.deepcopy(runner.model[1].state_dict())
    runner.val()
    assert all(torch.equal(before[k], v) for k, v in runner.model[1].state_dict().items())


def test_runner_is_the_compat_runner():
    assert CompatRunner is Runner
