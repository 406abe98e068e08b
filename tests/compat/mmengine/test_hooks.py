"""hookline.compat.mmengine.hooks: MMEngine's arguments, checkpoints and stateless stages."""

from __future__ import annotations

import json

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import ConfigError, HookError
from hookline.compat.mmengine.hooks import (
    CheckpointHook,
    EarlyStoppingHook,
    EMAHook,
    LoggerHook,
    ParamSchedulerHook,
    RuntimeInfoHook,
)
from hookline.compat.mmengine.registry import HOOKS

from ..conftest import make_runner, toy_data


def test_builtins_build_with_mmengine_arguments():
    assert type(HOOKS.build({"type": "EMAHook", "momentum": 0.001, "begin_epoch": 1})) is EMAHook
    assert HOOKS.build({"type": "CheckpointHook", "interval": 2}).interval == 2
    assert HOOKS.build({"type": "EarlyStoppingHook", "monitor": "acc"}).min_delta == 0.1


@pytest.mark.parametrize(("cls", "kwargs", "match"), [
    (EMAHook, {"begin_iter": 1, "begin_epoch": 1}, "not both"),
    (EMAHook, {"begin_iter": -1}, "begin_iter must be an int >= 0"),
    (EMAHook, {"ema_type": "NoSuchEMA"}, "not a registered averaged model"),
    (EMAHook, {"decay": 0.9}, "unexpected argument.*'decay'"),
    (EMAHook, {"momentum": 2.0, "ema_type": "ExponentialMovingAverage"}, None),
    (CheckpointHook, {"published_keys": ["meta"]}, "published_keys"),
    (CheckpointHook, {"save_begin": 2}, "save_begin"),
    (CheckpointHook, {"save_best": ["acc", "loss"]}, "one metric"),
    (CheckpointHook, {"save_param_scheduler": False}, "save_param_scheduler"),
    (LoggerHook, {"out_dir": "s3://bucket"}, "out_dir"),
])
def test_unsupported_or_bad_arguments_are_one_config_error(cls, kwargs, match):
    if match is None:  # momentum is checked by the average, when the run builds it
        hook = cls(**kwargs)
        with pytest.raises(ConfigError, match="momentum must be in"):
            hook.before_run(make_runner())
        return
    with pytest.raises(ConfigError, match=match):
        cls(**kwargs)


def test_checkpoint_interval_minus_one_saves_only_the_last(tmp_path):
    runner = make_runner(tmp_path, max_epochs=3,
                         default_hooks={"checkpoint": CheckpointHook(interval=-1)})
    runner.train()
    assert sorted(p.name for p in tmp_path.glob("*.pth")) == ["epoch_3.pth"]


def test_logger_hook_also_feeds_the_visualizer(tmp_path):
    runner = make_runner(tmp_path, default_hooks={"logger": LoggerHook(interval=4)},
                         val_dataloader=DataLoader(toy_data(), batch_size=32),
                         metrics={"acc": "accuracy"})
    runner.train()
    lines = (runner.work_dir / runner.timestamp / "vis_data" / "scalars.json").read_text()
    records = [json.loads(line) for line in lines.splitlines()]
    assert [r["step"] for r in records if "lr" in r] == [4, 8, 12, 16]  # MMEngine's keys
    assert [r["step"] for r in records if "acc" in r] == [1, 2]


def test_param_scheduler_hook_works_without_init_and_steps_by_unit(tmp_path):
    class NoInit(ParamSchedulerHook):
        def __init__(self):
            pass

    lrs = []
    runner = make_runner(tmp_path, max_epochs=2, default_hooks={"param_scheduler": NoInit()},
                         param_scheduler=[{"type": "StepLR", "step_size": 1, "gamma": 0.5},
                                          {"type": "LinearLR", "start_factor": 0.5,
                                           "total_iters": 4, "by_epoch": False}])
    runner.on("before_train_iter", lambda r, batch_idx, data_batch=None: lrs.append(
        r.optimizer.param_groups[0]["lr"]))
    runner.train()
    assert lrs[:5] == pytest.approx([0.05, 0.0625, 0.075, 0.0875, 0.1])
    assert lrs[8] == pytest.approx(0.05)  # the per-epoch StepLR halved it after epoch 1


def test_early_stopping_without_its_metric_skips_unless_strict(tmp_path):
    lenient = make_runner(tmp_path, hooks=[EarlyStoppingHook("nope", rule="greater", patience=1)],
                          val_dataloader=DataLoader(toy_data(), batch_size=32))
    with pytest.warns(UserWarning, match="'nope' is not among the metrics"):
        lenient.train()
    with pytest.raises(Exception, match="'nope' is not a validation metric"):  # as it is built
        make_runner(tmp_path / "s", hooks=[EarlyStoppingHook("nope", rule="less", strict=True)],
                    val_dataloader=DataLoader(toy_data(), batch_size=32))


def test_runtime_info_hook_writes_mmengine_keys(tmp_path):
    stages = []
    runner = make_runner(tmp_path, hooks=[RuntimeInfoHook()],
                         val_dataloader=DataLoader(toy_data(), batch_size=32))
    runner.on("before_val_epoch", lambda r: stages.append(r.message_hub.get_info("loop_stage")))
    runner.on("after_train_epoch", lambda r: stages.append(r.message_hub.get_info("loop_stage")))
    runner.train()
    hub = runner.message_hub
    assert stages == ["train", "val", "train", "val"]
    assert hub.get_info("experiment_name") == runner.experiment_name and hub.get_info("seed") == 0
    assert hub.get_info("loop_stage") is None and hub.get_scalar("train/lr").current() == 0.1


def test_ema_hook_begin_epoch_copies_the_weights_until_then(tmp_path):
    weights = []
    hook = EMAHook(momentum=0.5, begin_epoch=2)
    runner = make_runner(tmp_path, max_epochs=2, hooks=[hook])
    runner.on("after_train_epoch", lambda r: weights.append(
        (r.model.weight.detach().clone(), hook.ema_model.module.weight.detach().clone())))
    runner.train()
    assert torch.equal(*weights[0])  # epoch 1: a copy
    assert not torch.equal(*weights[1])  # epoch 2: averaged
    with pytest.raises(HookError, match="begin_epoch=5 is after the last epoch") as info:
        make_runner(tmp_path / "late", hooks=[EMAHook(begin_epoch=5)]).train()
    assert isinstance(info.value.__cause__, ConfigError)
