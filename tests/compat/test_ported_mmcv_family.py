"""mmcv 1.x-era hooks (the seeds' first custom hook, mmcv's generic methods, an
OptimizerHook subclass doing the update itself, a logger backend, closures), ported by
``mmcv.runner`` -> ``hookline.compat.mmcv.runner`` and checked for their effect."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader
from toycv.core.hooks import ListLoggerHook, LossPrinterHook, ManualOptimizerHook, ModeCounterHook

from hookline import HOOKS, Hook
from hookline.compat.mmcv.runner import HOOKS as MMCV_HOOKS
from hookline.compat.mmcv.runner import ClosureHook, EMAHook
from hookline.compat.mmcv.runner.runner_view import runner_view

from .conftest import make_runner, toy_data


class Losses(Hook):
    priority = "LOWEST"

    def __init__(self):
        self.losses, self.weights = [], []

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self.losses.append(float(outputs["loss"].detach()))
        self.weights.append(runner.model.weight.detach().clone())


def test_the_seeds_first_custom_hook_works_as_taught(tmp_path):

    assert HOOKS.get("LossPrinterHook") is LossPrinterHook  # registered in mmcv's scope
    assert HOOKS.get("mmcv.LossPrinterHook") is LossPrinterHook
    losses = Losses()
    runner = make_runner(tmp_path, hooks=[{"type": "LossPrinterHook", "interval": 3}, losses])
    hook = next(h for h in runner.hooks.hooks if isinstance(h, LossPrinterHook))
    assert type(hook) is LossPrinterHook and hook.get_triggered_stages() == ["after_train_iter"]
    runner.train()
    assert [r[0] for r in hook.records] == [3, 6, 9, 12, 15]
    assert [r[1] for r in hook.records] == [2, 5, 0, 3, 6]  # inner_iter: the batch in its epoch
    assert [r[2] for r in hook.records] == pytest.approx([losses.losses[i - 1] for i in
                                                          (3, 6, 9, 12, 15)])
    assert hook.last_iters == [(0, 7, 8), (1, 7, 8)]


def test_generic_methods_run_at_train_and_val_stages_with_the_mode_set(tmp_path):

    hook = ModeCounterHook()
    runner = make_runner(tmp_path, hooks=[hook], val_dataloader=DataLoader(toy_data(), batch_size=32))
    assert hook.get_triggered_stages() == [
        "before_train_epoch", "after_train_iter", "before_val_epoch", "after_val_iter", "after_run"]
    runner.train()
    assert hook.epochs == {"train": 2, "val": 2}
    assert hook.iters == {"train": 16, "val": 4}
    assert hook.batch_sizes == [8, 8, 8, 8]  # every 4th training batch of each epoch
    assert runner_view(runner).meta["hook_msgs"]["mode_counter"] == {"train": 16, "val": 4}


def test_an_optimizer_hook_subclass_runs_the_update_the_mmcv_way(tmp_path):

    losses = Losses()
    runner = make_runner(tmp_path, hooks=[ManualOptimizerHook(grad_clip=dict(max_norm=0.05)),
                                          losses], max_epochs=1)
    torch.manual_seed(0)
    reference = torch.nn.Linear(4, 2)
    reference.load_state_dict(runner.model.state_dict())
    runner.train()
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in DataLoader(toy_data(), batch_size=8):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(reference(x), y).backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), max_norm=0.05)
        optimizer.step()
    assert torch.allclose(runner.model.weight, reference.weight, atol=1e-6)
    assert len(runner_view(runner).log_buffer.val_history["grad_norm"]) == 8


def test_a_logger_backend_sends_interval_means_and_validation_metrics(tmp_path):

    losses = Losses()
    logger = ListLoggerHook(interval=4)
    runner = make_runner(tmp_path, hooks=[logger, losses], metrics={"acc": "accuracy"},
                         val_dataloader=DataLoader(toy_data(), batch_size=32))
    runner.train()
    train = [entry for entry in logger.sent if entry[0] == "train"]
    assert [entry[1] for entry in train] == [4, 8, 12, 16]
    for k, (_, _, _, tags) in enumerate(train):
        assert tags["train/loss"] == pytest.approx(sum(losses.losses[4 * k:4 * k + 4]) / 4)
        assert tags["learning_rate"] == 0.1
    val = [entry for entry in logger.sent if entry[0] == "val"]
    assert len(val) == 2 and all("val/acc" in entry[3] for entry in val)
    assert val[-1][3]["val/acc"] == pytest.approx(runner.val_loop.last_metrics["acc"])


def test_closure_hooks_set_stage_methods_on_the_instance(tmp_path):
    seen = []
    epoch_end = ClosureHook("after_train_epoch", lambda runner: seen.append(("epoch", runner.epoch)))
    generic = MMCV_HOOKS.build(dict(type="ClosureHook", fn_name="after_epoch",
                                    fn=lambda runner: seen.append((runner.mode, runner.epoch))))
    runner = make_runner(tmp_path, hooks=[epoch_end, generic],
                         val_dataloader=DataLoader(toy_data(), batch_size=32))
    assert generic.get_triggered_stages() == ["after_train_epoch", "after_val_epoch"]
    runner.train()
    assert seen == [("epoch", 0), ("train", 0), ("val", 1), ("epoch", 1), ("train", 1), ("val", 2)]


def test_mmcv_ema_keeps_buffers_and_swaps_them_in_at_epoch_end(tmp_path):
    losses = Losses()
    hook = EMAHook(momentum=0.2, warm_up=1)
    runner = make_runner(tmp_path, hooks=[hook, losses], max_epochs=1)
    initial = runner.model.weight.detach().clone()
    runner.train()
    expected = initial
    for step, weights in enumerate(losses.weights):
        momentum = min(0.2, (1 + step) / (1 + step))
        expected = (1 - momentum) * expected + momentum * weights
    # after the last epoch the averages are in the model and the raw weights in the buffers
    assert torch.allclose(runner.model.weight, expected, atol=1e-6)
    assert torch.equal(runner.model.ema_weight, losses.weights[-1])
    assert "ema_weight" in runner.model.state_dict()
