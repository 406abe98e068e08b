"""hookline.compat.mmcv.runner hooks: mmcv's arguments and semantics."""

from __future__ import annotations

import pytest
from torch.utils.data import DataLoader

from hookline import ConfigError
from hookline.compat.mmcv.runner import (
    HOOKS,
    CheckpointHook,
    ClosureHook,
    EvalHook,
    Hook,
    IterTimerHook,
    OptimizerHook,
    SyncBuffersHook,
    TextLoggerHook,
)
from hookline.compat.mmcv.runner.runner_view import runner_view

from ..conftest import make_runner, toy_data


def test_mmcv_names_build_from_the_mmcv_registry():
    assert HOOKS.scope == "mmcv"
    assert type(HOOKS.build(dict(type="OptimizerHook", grad_clip=None))) is OptimizerHook
    assert HOOKS.build(dict(type="StepLrUpdaterHook", step=[1])).policy == "step"
    assert HOOKS.build(dict(type="CheckpointHook", interval=1, filename_tmpl="e{}.pth")).interval == 1
    assert HOOKS.build(dict(type="SyncBuffersHook", distributed=True)).distributed


@pytest.mark.parametrize(("build", "match"), [
    (lambda: CheckpointHook(sync_buffer=True), "add SyncBuffersHook"),
    (lambda: CheckpointHook(file_client_args={"backend": "petrel"}), "file_client_args"),
    (lambda: CheckpointHook(nonsense=1), "unexpected argument"),
    (lambda: EvalHook(DataLoader(toy_data()), test_fn=print), "test_fn"),
    (lambda: EvalHook(DataLoader(toy_data()), metric="bbox"), "metric='bbox'"),
    (lambda: TextLoggerHook(out_dir="s3://x"), "out_dir"),
    (lambda: OptimizerHook(detect_anomalous_params=True), "detect_anomalous_params"),
    (lambda: ClosureHook("after_everything", print), "fn_name must be an mmcv stage"),
    (lambda: ClosureHook("after_iter", 3), "fn must be callable"),
])
def test_what_hookline_cannot_honour_is_one_config_error(build, match):
    with pytest.raises(ConfigError, match=match):
        build()


def test_optimizer_hook_configures_the_wrapper_and_timer_fills_the_log_buffer(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1,
                         hooks=[OptimizerHook(grad_clip=dict(max_norm=1.0)), IterTimerHook()])
    runner.train()
    assert runner.optim_wrapper.clip_grad["max_norm"] == 1.0
    assert "train/grad_norm" in runner.message_hub
    buffer = runner_view(runner).log_buffer
    assert len(buffer.val_history["time"]) == len(buffer.val_history["data_time"]) == 8
    assert len(buffer.val_history["loss"]) == 8


def test_eval_hook_and_checkpoint_hook_with_mmcv_arguments(tmp_path):
    runner = make_runner(tmp_path, max_epochs=2, metrics={"acc": "accuracy"}, hooks=[
        EvalHook(DataLoader(toy_data(), batch_size=32), interval=2, save_best="acc")],
        default_hooks={"checkpoint": CheckpointHook(interval=1, max_keep_ckpts=1)})
    runner.train()
    names = sorted(p.name for p in tmp_path.glob("*.pth"))
    assert "epoch_2.pth" in names and "epoch_1.pth" not in names
    assert any(n.startswith("best_acc") for n in names)


def test_mmcv_helpers_take_the_runner(tmp_path):
    calls = []

    class Helpers(Hook):
        def after_train_iter(self, runner):
            calls.append((self.every_n_iters(runner, 4), self.every_n_inner_iters(runner, 8),
                          self.end_of_epoch(runner), self.is_last_iter(runner)))

        def after_train_epoch(self, runner):
            calls.append(("epoch", self.every_n_epochs(runner, 2), self.is_last_epoch(runner)))

    make_runner(tmp_path, hooks=[Helpers()]).train()
    assert calls[3] == (True, False, False, False) and calls[7] == (True, True, True, False)
    assert calls[8] == ("epoch", False, False) and calls[-1] == ("epoch", True, True)
    assert calls[-2] == (True, True, True, True)


def test_sync_buffers_hook_accepts_mmcvs_argument():
    assert not SyncBuffersHook(distributed=False).distributed
