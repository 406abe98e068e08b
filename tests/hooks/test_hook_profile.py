"""Runner.hook_profile(): calls and time per hook and stage, on real runs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from hookline import Hook
from hookline.engine.hook import STAGES
from hookline.engine.hook_table import HookProfile, HookTiming

from ..engine.toy import make_runner


class EveryStage(Hook):
    """Overrides every stage and counts its own calls."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()


def _counting(stage: str):
    def method(self, runner, **kwargs) -> None:
        self.calls[stage] += 1
    method.__name__ = stage
    return method


for _stage in STAGES:
    setattr(EveryStage, _stage, _counting(_stage))


def test_counts_equal_the_stage_calls(tmp_path: Path) -> None:
    counter = EveryStage()
    runner = make_runner(tmp_path, max_epochs=2, hooks=[counter],
                         default_hooks={"checkpoint": {"type": "CheckpointHook"}})
    runner.hooks.start_profiling()
    runner.train()
    runner.val()
    profile = runner.hook_profile()
    assert isinstance(profile, HookProfile) and all(isinstance(r, HookTiming) for r in profile)
    table = profile.as_dict()
    mine = {stage: calls for stage, (calls, _) in table["EveryStage"].items()}
    assert mine == dict(counter.calls)
    # 2 epochs of 8 batches, 3 validations (2 in training, 1 standalone) of 4 batches
    assert mine["after_train_iter"] == 16 and mine["after_val_iter"] == 12
    assert mine["before_run"] == mine["after_run"] == 2
    # each epoch checkpoint is written once, after the validation that follows it
    assert mine["before_save_checkpoint"] == 2 and "before_test" not in mine
    assert table["IterTimerHook"]["before_train_iter"][0] == 16
    assert table["LoggerHook"]["after_val_epoch"][0] == 3
    assert table["CheckpointHook"]["after_train_epoch"][0] == 2
    assert all(row.total_s >= 0 and row.mean_s * row.calls == pytest.approx(row.total_s)
               for row in profile)
    assert [row.total_s for row in profile] == sorted((row.total_s for row in profile), reverse=True)


def test_printable_table(tmp_path: Path) -> None:
    runner = make_runner(tmp_path, max_epochs=1, default_hooks={"checkpoint": None})
    runner.hooks.start_profiling()
    runner.train()
    lines = str(runner.hook_profile()).splitlines()
    assert lines[0].split() == ["hook", "stage", "calls", "total", "ms", "mean", "us", "share"]
    assert lines[-1].split()[:2] == ["total", str(sum(r.calls for r in runner.hook_profile()))]
    timer_line = next(line for line in lines if line.split()[:2] == ["IterTimerHook",
                                                                     "after_train_iter"])
    assert timer_line.split()[2] == "8" and timer_line.endswith("%")
    assert len(lines) == len(runner.hook_profile()) + 2


def test_two_instances_of_a_class_are_told_apart(tmp_path: Path) -> None:
    first, second = EveryStage(), EveryStage()
    runner = make_runner(tmp_path, max_epochs=1, hooks=[first, second],
                         default_hooks={"checkpoint": None})
    runner.hooks.start_profiling()
    runner.train()
    table = runner.hook_profile().as_dict()
    assert table["EveryStage"]["after_train_iter"][0] == 8
    assert table["EveryStage.2"]["after_train_iter"][0] == 8


def test_off_by_default_restart_and_stop(tmp_path: Path) -> None:
    runner = make_runner(tmp_path, max_epochs=1, default_hooks={"checkpoint": None})
    assert runner.hooks.profile is None
    runner.train()
    profile = runner.hook_profile()
    assert profile == [] and not profile.enabled
    assert "hook profiling is off" in str(profile)
    runner.hooks.start_profiling()
    assert runner.hook_profile() == [] and str(runner.hook_profile()) == "no hook calls recorded"
    runner.val()
    assert runner.hook_profile().as_dict()["IterTimerHook"]["before_val_iter"][0] == 4
    runner.hooks.start_profiling()  # starts again from zero
    assert runner.hook_profile() == []
    runner.hooks.stop_profiling()
    runner.val()
    assert runner.hooks.profile is None and not runner.hook_profile().enabled
