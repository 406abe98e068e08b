"""EarlyStoppingHook on real training runs: patience, min_delta, threshold, NaN, resume."""

from __future__ import annotations

import doctest
import math

import pytest
import torch

import hookline.hooks.early_stopping
from hookline import HOOKS, ConfigError, HookError
from hookline.hooks import EarlyStoppingHook

from ._toy import (  # one_thread is an autouse fixture
    Explode,
    assert_equal_states,
    make_runner,
    one_thread,  # noqa: F401
    snapshot,
)


def scripted(values):
    """A validation metric that returns ``values`` one validation after the other."""
    calls = []

    def metric(preds, targets):
        calls.append(1)
        return torch.tensor(values[len(calls) - 1])

    return metric


def test_docstring_examples():
    assert doctest.testmod(hookline.hooks.early_stopping).failed == 0


def test_stops_after_patience_validations_without_improvement_by_min_delta(tmp_path):
    # improvements of 0.1, 0.05, then 0.01 and 0.015 (not > min_delta=0.02), then 0.03
    scores = [0.5, 0.6, 0.65, 0.66, 0.665, 0.68, 0.9, 0.95]
    hook = EarlyStoppingHook("f1", min_delta=0.02, patience=3)
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=8, metrics={"f1": scripted(scores)})
    runner.train()
    # the wait restarts at 0.68 (beats 0.65 by 0.03): 3 more would be needed; 0.9 improves again
    assert runner.epoch == 8 and hook.best_score == pytest.approx(0.95) and hook.wait_count == 0

    hook = EarlyStoppingHook("f1", min_delta=0.02, patience=2)
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=8, metrics={"f1": scripted(scores)})
    runner.train()
    assert runner.epoch == 5 and runner.stop_training
    assert hook.best_score == pytest.approx(0.65) and hook.wait_count == 2
    assert "did not improve on its best 0.65" in hook.stop_reason


def test_less_is_better_for_a_loss_and_a_real_run_stops(tmp_path):
    hook = EarlyStoppingHook("loss", patience=2)
    assert hook.rule == "less"
    losses: list[float] = []
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=20)
    runner.on("after_val_epoch", lambda r, metrics: losses.append(metrics["loss"]))
    runner.train()
    assert runner.epoch < 20 and len(losses) == runner.epoch
    best = min(losses)
    assert hook.best_score == best and losses.index(best) == len(losses) - 3
    assert all(value >= best for value in losses[-2:])


def test_stopping_threshold_and_non_finite_values_stop_at_once(tmp_path):
    hook = EarlyStoppingHook("f1", patience=10, stopping_threshold=0.8)
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=8,
                         metrics={"f1": scripted([0.5, 0.79, 0.8, 0.9, 0.95])})
    runner.train()
    assert runner.epoch == 3 and "reached stopping_threshold 0.8" in hook.stop_reason

    hook = EarlyStoppingHook("error_rate", patience=10)
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=8,
                         metrics={"error_rate": scripted([0.5, 0.4, math.nan, 0.1])})
    runner.train()
    assert runner.epoch == 3 and "is not finite" in hook.stop_reason and hook.best_score == pytest.approx(0.4)

    hook = EarlyStoppingHook("error_rate", patience=2, check_finite=False)
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=8,
                         metrics={"error_rate": scripted([0.5, math.nan, math.inf, 0.1])})
    runner.train()  # NaN never improves; inf is not less than 0.5: two without improvement
    assert runner.epoch == 3 and hook.wait_count == 2


def test_iteration_based_runs_stop_too(tmp_path):
    hook = HOOKS.build({"type": "EarlyStoppingHook", "monitor": "val/f1", "patience": 1})
    runner = make_runner(tmp_path, hooks=[hook], max_iters=40, val_interval=5,
                         metrics={"f1": scripted([0.1, 0.2, 0.2, 0.3])})
    runner.train()
    assert runner.iter == 15 and hook.best_score == pytest.approx(0.2)


def test_a_missing_monitor_is_a_config_error_listing_the_metrics(tmp_path):
    # the names are known (built-in accuracy, loss): refused as the Runner is built
    with pytest.raises(ConfigError, match=r"monitor: 'acc' is not a validation metric.*"
                                          r"did you mean 'accuracy'\? \(validation reports: "
                                          r"accuracy, loss\)"):
        make_runner(tmp_path, hooks=[EarlyStoppingHook("acc")], max_epochs=2)
    # added after construction: found at the first validation
    runner = make_runner(tmp_path, max_epochs=2)
    runner.register_hook(EarlyStoppingHook("acc"))
    with pytest.raises(HookError) as info:
        runner.train()
    cause = info.value.__cause__
    assert isinstance(cause, ConfigError)
    assert "monitor='acc'" in str(cause) and "['accuracy', 'loss']" in str(cause)
    assert runner.iter == 6

    runner = make_runner(tmp_path, hooks=[EarlyStoppingHook("loss")], val=False)
    with pytest.raises(HookError, match="needs a val_dataloader"):
        runner.train()
    assert runner.iter == 0  # before any training


def test_bad_arguments_are_config_errors():
    with pytest.raises(ConfigError, match="cannot infer"):
        EarlyStoppingHook("widget")
    assert EarlyStoppingHook("widget", rule="greater").rule == "greater"
    with pytest.raises(ConfigError, match="patience"):
        EarlyStoppingHook("loss", patience=0)
    with pytest.raises(ConfigError, match="min_delta"):
        EarlyStoppingHook("loss", min_delta=-1)
    with pytest.raises(ConfigError, match="rule"):
        EarlyStoppingHook("loss", rule="smaller")
    with pytest.raises(ConfigError, match="stopping_threshold"):
        EarlyStoppingHook("loss", stopping_threshold="0.1")


def test_standalone_validation_is_not_counted(tmp_path):
    hook = EarlyStoppingHook("f1", patience=1)
    runner = make_runner(tmp_path, hooks=[hook], metrics={"f1": scripted([0.5, 0.4, 0.3])})
    runner.val()
    runner.val()
    assert hook.best_score is None and hook.wait_count == 0 and not runner.stop_training


def test_resume_in_the_middle_of_a_run_keeps_the_count_and_the_best_score(tmp_path):
    def hook():
        return EarlyStoppingHook("loss", patience=2)

    whole_hook = hook()
    whole = make_runner(tmp_path / "whole", hooks=[whole_hook], max_epochs=20)
    whole.train()
    stop_epoch = whole.epoch
    assert stop_epoch < 20 and whole_hook.wait_count == 2

    # stop in the middle of the last epoch, when the count is 1
    at = (stop_epoch - 1) * 6 + 3
    first_hook = hook()
    first = make_runner(tmp_path / "run", hooks=[first_hook, Explode(at)], max_epochs=20)
    with pytest.raises(HookError, match="stop here"):
        first.train()
    assert first_hook.wait_count == 1
    resumed_hook = hook()
    resumed = make_runner(tmp_path / "run", hooks=[resumed_hook], max_epochs=20,
                          resume=tmp_path / "run" / f"iter_{at}.pth")
    resumed.train()
    assert (resumed.epoch, resumed.iter) == (whole.epoch, whole.iter)
    assert resumed_hook.state_dict() == whole_hook.state_dict()
    assert_equal_states(snapshot(resumed.model), snapshot(whole.model))


def test_a_misspelled_monitor_is_warned_about_before_training(tmp_path):
    hook = EarlyStoppingHook("acuracy", rule="greater", patience=2)
    with pytest.raises(ConfigError, match="did you mean 'accuracy'"):  # given to the Runner
        make_runner(tmp_path, hooks=[hook], max_epochs=1)
    runner = make_runner(tmp_path, max_epochs=1)
    runner.register_hook(hook)  # added later: warned about before training
    with pytest.raises(HookError):  # the validation then names the metrics it gave
        runner.train()
    log = (tmp_path / "log.txt").read_text(encoding="utf-8")
    assert "EarlyStoppingHook monitor='acuracy' is not a metric this run's validation " \
           "reports (accuracy, loss); did you mean 'accuracy'?" in log
