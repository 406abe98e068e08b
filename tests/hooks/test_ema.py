"""EMAHook on real training runs: equal to AveragedModel, swapped for evaluation, exact resume."""

from __future__ import annotations

import copy
import doctest

import pytest
import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

import hookline.hooks.ema
from hookline import HOOKS, ConfigError, HookError
from hookline.engine.checkpoint import load_checkpoint_file
from hookline.engine.metrics import accuracy
from hookline.hooks import CheckpointHook, EMAHook

from ._toy import (  # one_thread is an autouse fixture
    Explode,
    assert_equal_states,
    dataset,
    make_runner,
    one_thread,  # noqa: F401
    snapshot,
)


def test_docstring_examples():
    assert doctest.testmod(hookline.hooks.ema).failed == 0


@pytest.mark.parametrize("decay,interval,begin_iter,update_buffers", [
    (0.9, 1, 0, False),
    (0.8, 2, 3, True),
])
def test_ema_equals_averaged_model_after_the_same_steps(tmp_path, decay, interval, begin_iter,
                                                        update_buffers):
    hook = EMAHook(decay=decay, interval=interval, begin_iter=begin_iter,
                   update_buffers=update_buffers)
    # iteration-based with validation every 4 iterations: the swaps must not disturb training
    runner = make_runner(tmp_path, hooks=[hook], max_iters=10, shuffle=False, val_interval=4)
    model = copy.deepcopy(runner.model)
    runner.train()

    # the same 10 steps by hand, with torch's own AveragedModel
    torch.manual_seed(0)  # dropout draws: the Runner seeded 0 too and drew nothing before
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    reference = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay),
                              use_buffers=update_buffers)
    batches = [dataset()[i:i + 8] for i in range(0, 48, 8)]
    model.train()
    for i in range(10):
        inputs, targets = batches[i % 6]
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i >= begin_iter and (i + 1) % interval == 0:
            reference.update_parameters(model)
    assert_equal_states(snapshot(runner.model), snapshot(model))
    assert_equal_states(snapshot(hook.ema), snapshot(reference))
    assert int(hook.ema.n_averaged) == len([i for i in range(10)
                                             if i >= begin_iter and (i + 1) % interval == 0])


def test_validation_and_test_use_the_ema_weights_and_swap_back(tmp_path):
    hook = EMAHook(decay=0.7)
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=2)
    seen: dict[str, list] = {"val": [], "after_val": []}
    runner.on("before_val_iter", lambda r, **kw: seen["val"].append(snapshot(r.model)),
              when=lambda r, batch_idx, **kw: batch_idx == 0)
    runner.on("after_val", lambda r: seen["after_val"].append(
        (snapshot(r.model), snapshot(hook.ema_model))))
    runner.train()
    assert len(seen["val"]) == len(seen["after_val"]) == 2
    ema_now, raw_now = snapshot(hook.ema_model), snapshot(runner.model)
    names = [name for name, _ in runner.model.named_parameters()]
    # during the last validation the model held the EMA parameters (and its own buffers) ...
    for name in names:
        assert torch.equal(seen["val"][-1][name], ema_now[name])
    assert sum(not torch.equal(ema_now[n], raw_now[n]) for n in names) >= 4
    # ... and afterwards the raw ones again, with the EMA intact
    assert_equal_states(seen["after_val"][-1][0], raw_now)
    assert_equal_states(seen["after_val"][-1][1], ema_now)

    # the metrics are those of the EMA weights
    scored = copy.deepcopy(runner.model)
    scored.load_state_dict({**raw_now, **{n: ema_now[n] for n in names}})
    scored.eval()
    inputs, targets = dataset()[:]
    with torch.no_grad():
        expected = float(accuracy(scored(inputs), targets))
    assert runner.val()["accuracy"] == pytest.approx(expected)
    assert_equal_states(snapshot(runner.model), raw_now)


def test_checkpoints_hold_the_raw_weights_and_the_ema_in_the_hook_state(tmp_path):
    hook = EMAHook(decay=0.6)
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=2,
                         checkpoint={"type": "CheckpointHook", "save_best": "accuracy",
                                     "rule": "greater"})
    at_save: dict = {}

    def save_mid_validation(r, batch_idx, data_batch=None, outputs=None):
        at_save["model"] = snapshot(r.model)  # the EMA weights, swapped in
        at_save["ema_module"] = snapshot(hook.ema_model)  # the raw weights, parked
        r.save_checkpoint("mid_val.pth")

    runner.on("after_val_iter", save_mid_validation, once=True)
    best_at: list = []
    runner.on("after_val_epoch", lambda r, metrics: best_at.append(
        (snapshot(r.model), snapshot(hook.ema_model))), priority="LOWEST")
    runner.train()

    names = [name for name, _ in runner.model.named_parameters()]
    mid = load_checkpoint_file(tmp_path / "mid_val.pth")
    assert_equal_states(mid["state_dict"], at_save["ema_module"] | {
        k: v for k, v in at_save["model"].items() if k not in names})
    ema_weights = EMAHook.weights_from_checkpoint(mid)
    for name in names:
        assert torch.equal(ema_weights[name], at_save["model"][name])
    assert not torch.equal(ema_weights[names[0]], mid["state_dict"][names[0]])

    # the best checkpoint, written at after_val_epoch, and the regular one agree
    best_hook = next(h for h in runner.hooks.hooks if isinstance(h, CheckpointHook))
    best = load_checkpoint_file(tmp_path / best_hook.best_ckpt)
    raw, ema = best_at[int(best_hook.best_ckpt.split("epoch_")[1].split(".")[0]) - 1]
    assert_equal_states(best["state_dict"], raw)
    last = load_checkpoint_file(tmp_path / "epoch_2.pth")
    assert_equal_states(last["state_dict"], best_at[-1][0])
    loaded = EMAHook.weights_from_checkpoint(tmp_path / "epoch_2.pth")
    for name in names:
        assert torch.equal(loaded[name], best_at[-1][1][name])
    runner.model.load_state_dict(loaded)  # a state dict the model takes as it is


@pytest.mark.parametrize("update_buffers", [False, True])
def test_resume_in_the_middle_of_a_run_is_exact(tmp_path, update_buffers):
    def ema_hook():
        return EMAHook(decay=0.8, interval=2, update_buffers=update_buffers)

    whole_hook = ema_hook()
    whole = make_runner(tmp_path / "whole", hooks=[whole_hook])
    whole.train()

    first = make_runner(tmp_path / "run", hooks=[ema_hook(), Explode(9)])
    with pytest.raises(HookError, match="stop here"):
        first.train()
    resumed_hook = ema_hook()
    resumed = make_runner(tmp_path / "run", hooks=[resumed_hook],
                          resume=tmp_path / "run" / "iter_9.pth")
    resumed.train()
    assert resumed.iter == whole.iter == 18
    assert_equal_states(snapshot(resumed.model), snapshot(whole.model))
    assert_equal_states(snapshot(resumed_hook.ema), snapshot(whole_hook.ema))


def test_load_before_the_run_and_a_standalone_val_use_the_saved_ema(tmp_path):
    trained_hook = EMAHook(decay=0.5)
    trained = make_runner(tmp_path / "a", hooks=[trained_hook], max_epochs=1,
                          checkpoint={"type": "CheckpointHook"})
    trained.train()
    metrics = trained.val()
    # a fresh run that only validates, resuming the checkpoint: the EMA comes back
    hook = EMAHook(decay=0.5)
    fresh = make_runner(tmp_path / "b", hooks=[hook], resume=tmp_path / "a" / "epoch_1.pth")
    assert fresh.val() == metrics
    assert_equal_states(snapshot(hook.ema), snapshot(trained_hook.ema))
    # state loaded before the run built the average is applied when it starts
    early = EMAHook(decay=0.5)
    early.load_state_dict(load_checkpoint_file(tmp_path / "a" / "epoch_1.pth")["hooks"]["EMAHook"])
    assert early.state_dict()["ema"].keys() == trained_hook.state_dict()["ema"].keys()
    other = make_runner(tmp_path / "c", hooks=[early])
    other.val()
    assert_equal_states(snapshot(early.ema), snapshot(trained_hook.ema))


def test_no_ema_before_begin_iter_means_validation_scores_the_raw_model(tmp_path):
    hook = EMAHook(begin_iter=1000)
    plain = make_runner(tmp_path / "plain", max_epochs=1)
    plain.train()
    runner = make_runner(tmp_path / "ema", hooks=[hook], max_epochs=1)
    runner.train()
    assert int(hook.ema.n_averaged) == 0
    assert runner.val() == plain.val()


def test_bad_arguments_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="decay"):
        EMAHook(decay=1.5)
    with pytest.raises(ConfigError, match="interval"):
        HOOKS.build({"type": "EMAHook", "interval": 0})
    with pytest.raises(ConfigError, match="begin_iter"):
        EMAHook(begin_iter=-1)
    with pytest.raises(ConfigError, match="update_buffers"):
        EMAHook(update_buffers="yes")
    runner = make_runner(tmp_path, max_epochs=1)
    runner.train()
    with pytest.raises(ConfigError, match="no EMA state"):
        EMAHook.weights_from_checkpoint(runner.save_checkpoint("plain.pth"))
