"""The mmcv view of a Runner: mmcv's runner attributes and methods, one view per Runner."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from torch.utils.data import DataLoader

from hookline.compat.mmcv.runner import (
    BaseRunner,
    EpochBasedRunner,
    Hook,
    IterBasedRunner,
    LogBuffer,
)
from hookline.compat.mmcv.runner.runner_view import MmcvRunner, runner_view

from ..conftest import make_runner, toy_data


class Probe(Hook):
    def __init__(self):
        self.seen = []

    def before_run(self, runner):
        self.seen.append(("before_run", type(runner) is MmcvRunner, runner.mode))

    def before_val_iter(self, runner):
        self.seen.append(("before_val_iter", runner.mode, runner.inner_iter,
                          len(runner.data_loader), runner.data_batch[0].shape[0]))

    def after_val_iter(self, runner):
        self.seen.append(("after_val_iter", sorted(runner.outputs)))

    def after_train_epoch(self, runner):
        runner.custom_flag = runner.epoch  # written through to the Runner
        path = runner.save_checkpoint(runner.work_dir, filename_tmpl="mmcv_{}.pth")
        # as in mmcv, runner.save_checkpoint leaves hook_msgs['last_ckpt'] to CheckpointHook
        self.seen.append(("saved", path.name, "last_ckpt" in runner.meta["hook_msgs"]))


def test_a_hook_sees_mmcv_attributes_in_each_mode(tmp_path):
    probe = Probe()
    runner = make_runner(tmp_path, max_epochs=1, hooks=[probe],
                         val_dataloader=DataLoader(toy_data(), batch_size=32))
    runner.train()
    assert probe.seen[0] == ("before_run", True, "train")
    assert probe.seen[1] == ("saved", "mmcv_1.pth", False)
    assert probe.seen[2] == ("before_val_iter", "val", 0, 2, 32)
    assert probe.seen[3] == ("after_val_iter", ["loss", "num_samples", "preds", "targets"])
    assert runner.custom_flag == 0 and (tmp_path / "mmcv_1.pth").exists()


def test_views_are_one_per_runner_and_do_not_keep_it_alive(tmp_path):
    runner = make_runner(tmp_path)
    view = runner_view(runner)
    assert runner_view(runner) is view and runner_view(view) is view
    assert isinstance(view, EpochBasedRunner) and isinstance(view, BaseRunner)
    assert not isinstance(view, IterBasedRunner) and isinstance(runner, EpochBasedRunner)
    assert isinstance(make_runner(tmp_path / "i", max_epochs=None, max_iters=4), IterBasedRunner)
    assert not isinstance(object(), BaseRunner)
    assert view.current_lr() == [0.1] and view.current_momentum() == [0.0]
    assert view._max_epochs == 2 and view._max_iters == 16  # noqa: SLF001  (mmcv's names)
    assert view.hooks == runner.hooks.hooks
    ref = weakref.ref(runner)
    del runner, view
    gc.collect()
    assert ref() is None


def test_log_buffer_averages_with_counts_and_converts_tensors_when_read():
    buffer = LogBuffer()
    buffer.update({"loss": torch.tensor(1.0), "acc": 0.5}, count=4)
    buffer.update({"loss": torch.tensor(3.0), "acc": 1.0}, count=4)
    buffer.average(1)
    assert buffer.output == {"loss": 3.0, "acc": 1.0} and buffer.ready
    buffer.average()
    assert buffer.output["loss"] == 2.0
    buffer.clear_output()
    assert not buffer.ready and buffer.val_history
    buffer.clear()
    assert not buffer.val_history
    with pytest.raises(TypeError):
        buffer.update([1])
