"""The generated stage callers of the Runner's hook table: arguments, adaptation, errors, profiling."""

from __future__ import annotations

import pytest

from hookline import Hook
from hookline.core import HookError
from hookline.engine.hook_table import HookTable
from hookline.engine.stage_calls import MAX_UNROLLED

from .toy import make_runner


class Full(Hook):
    def __init__(self, log):
        self.log = log

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self.log.append(("full", runner, batch_idx, data_batch, outputs))


class RunnerOnly(Hook):  # mmcv's style: the Runner passes runner alone
    def __init__(self, log):
        self.log = log

    def after_train_iter(self, runner):
        self.log.append(("runner only", runner))


class IndexOnly(Hook):
    def __init__(self, log):
        self.log = log

    def after_train_iter(self, runner, batch_idx):
        self.log.append(("index only", runner, batch_idx))


class Anything(Hook):
    def __init__(self, log):
        self.log = log

    def after_train_iter(self, runner, **kwargs):
        self.log.append(("anything", runner, kwargs))


def table_of(*hooks):
    table = HookTable()
    for hook in hooks:
        table.add(hook)
    return table


@pytest.mark.parametrize("through", ["callers", "call"])
def test_each_hook_gets_the_arguments_its_signature_names(through):
    log = []
    table = table_of(Full(log), RunnerOnly(log), IndexOnly(log), Anything(log))
    arguments = {"batch_idx": 3, "data_batch": "batch", "outputs": {"loss": 1.0}}
    if through == "callers":
        table.callers["after_train_iter"]("runner", **arguments)
    else:
        table.call("runner", "after_train_iter", **arguments)
    assert log == [("full", "runner", 3, "batch", {"loss": 1.0}), ("runner only", "runner"),
                   ("index only", "runner", 3), ("anything", "runner", arguments)]


def test_a_call_leaving_out_an_argument_or_adding_one_keeps_the_old_behaviour():
    # the generic loop: defaults of the hook apply, extras reach who takes **kwargs
    log = []
    table = table_of(Full(log), RunnerOnly(log), Anything(log))
    table.call("r", "after_train_iter", batch_idx=1)
    assert log == [("full", "r", 1, None, None), ("runner only", "r"), ("anything", "r", {"batch_idx": 1})]
    log.clear()
    table = table_of(RunnerOnly(log), Anything(log))
    table.call("r", "after_train_iter", batch_idx=1, data_batch=2, outputs=3, extra=4)
    assert log == [("runner only", "r"),
                   ("anything", "r", {"batch_idx": 1, "data_batch": 2, "outputs": 3, "extra": 4})]


@pytest.mark.parametrize("position", [0, 2, 4])
def test_an_error_names_the_hook_and_the_stage(position):
    log = []

    class Broken(Hook):
        def after_train_iter(self, runner):
            raise ValueError("no")

    hooks = [Full(log) for _ in range(5)]
    hooks[position] = broken = Broken()
    table = table_of(*hooks)
    with pytest.raises(HookError) as info:
        table.callers["after_train_iter"]("r", batch_idx=0, data_batch=None, outputs=None)
    assert info.value.hook is broken and info.value.point == "after_train_iter"
    assert isinstance(info.value.__cause__, ValueError) and len(log) == position


def test_callers_are_rebuilt_when_hooks_are_added_and_removed():
    log = []
    table = table_of(RunnerOnly(log))
    before = table.callers["after_train_iter"]
    handle = table.add(IndexOnly(log))
    table.callers["after_train_iter"]("r", batch_idx=7, data_batch=None, outputs=None)
    handle.remove()
    table.callers["after_train_iter"]("r", batch_idx=8, data_batch=None, outputs=None)
    assert before is not table.callers["after_train_iter"]
    assert log == [("runner only", "r"), ("index only", "r", 7), ("runner only", "r")]


def test_a_stage_nobody_hooks_and_one_with_more_hooks_than_are_unrolled():
    log = []
    table = table_of(*[IndexOnly(log) for _ in range(MAX_UNROLLED + 2)])
    table.call("r", "before_train")
    table.callers["after_train_iter"]("r", batch_idx=5, data_batch=None, outputs=None)
    assert log == [("index only", "r", 5)] * (MAX_UNROLLED + 2)


def test_profiling_swaps_in_timed_callers_the_loops_use_too():
    log = []
    table = table_of(RunnerOnly(log), IndexOnly(log))
    table.start_profiling()
    for i in range(3):
        table.callers["after_train_iter"]("r", batch_idx=i, data_batch=None, outputs=None)
    profile = table.profile_report().as_dict()
    assert {hook: stages["after_train_iter"][0] for hook, stages in profile.items()} == \
        {"RunnerOnly": 3, "IndexOnly": 3}
    table.stop_profiling()
    table.callers["after_train_iter"]("r", batch_idx=9, data_batch=None, outputs=None)
    assert table.profile is None and len(log) == 8


def test_a_training_run_calls_every_style_of_hook_once_per_iteration(tmp_path):
    log = []
    hooks = [Full(log), RunnerOnly(log), IndexOnly(log), Anything(log)]
    runner = make_runner(tmp_path, max_epochs=1, hooks=hooks, default_hooks={"logger": None})
    runner.train()
    iterations = runner.train_loop.iter
    assert iterations == 8
    assert [entry[0] for entry in log] == ["full", "runner only", "index only", "anything"] * 8
    full = [entry for entry in log if entry[0] == "full"]
    assert [entry[2] for entry in full] == list(range(8))
    assert all(entry[1] is runner and "loss" in entry[4] for entry in full)
