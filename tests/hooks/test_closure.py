"""ClosureHook and ``runner.on``: plain functions on one stage, with every/once/when filters."""

from __future__ import annotations

import doctest

import pytest

import hookline.hooks.closure
from hookline import HOOKS, ConfigError, HookError
from hookline.hooks import ClosureHook

from ._toy import (  # one_thread is an autouse fixture
    Explode,
    assert_equal_states,
    make_runner,
    one_thread,  # noqa: F401
    snapshot,
)


def test_docstring_examples():
    assert doctest.testmod(hookline.hooks.closure).failed == 0


def test_fn_gets_the_runner_and_the_stage_arguments(tmp_path):
    runner = make_runner(tmp_path, max_epochs=2)
    calls: list[tuple] = []

    def after_iter(r, batch_idx, data_batch, outputs):
        calls.append((r is runner, r.iter, batch_idx, len(data_batch[0]), outputs["loss"].item()))

    handle = runner.on("after_train_iter", after_iter)
    metrics_seen: list[dict] = []
    runner.on("after_val_epoch", lambda r, metrics: metrics_seen.append(metrics))
    epochs: list[int] = []
    runner.on("before_train_epoch", lambda r: epochs.append(r.epoch))
    runner.train()
    assert [c[1] for c in calls] == list(range(12)) and all(c[0] for c in calls)
    assert [c[2] for c in calls] == list(range(6)) * 2 and {c[3] for c in calls} == {8}
    assert len(metrics_seen) == 2 and set(metrics_seen[0]) == {"accuracy", "loss"}
    assert epochs == [0, 1]
    assert handle.hook.triggered_stages() == ["after_train_iter"]
    assert [s for s, methods in runner.hooks.stages.items()
            if any(m.__self__ is handle.hook for m in methods)] == ["after_train_iter"]


def test_every_once_and_when(tmp_path):
    runner = make_runner(tmp_path)  # 3 epochs of 6 iterations
    every: list[int] = []
    once: list[int] = []
    when: list[int] = []
    runner.on("after_train_iter", lambda r, **kw: every.append(r.iter + 1), every=4)
    once_handle = runner.on("after_train_iter", lambda r, **kw: once.append(r.iter + 1),
                            once=True, when=lambda r, **kw: r.iter >= 7)
    runner.on("after_train_iter", lambda r, batch_idx, **kw: when.append(r.iter + 1),
              when=lambda r, batch_idx, **kw: batch_idx == 5)
    runner.train()
    assert every == [4, 8, 12, 16]
    assert once == [8] and once_handle.removed and once_handle.hook not in runner.hooks.hooks
    assert when == [6, 12, 18]


def test_every_counts_calls_of_its_stage(tmp_path):
    runner = make_runner(tmp_path, max_epochs=4)
    seen: list[int] = []
    runner.on("after_val_epoch", lambda r, metrics: seen.append(r.epoch), every=2)
    runner.train()
    assert seen == [2, 4]


def test_priority_orders_it_among_the_other_hooks(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1)
    order: list[str] = []
    runner.on("after_train_iter", lambda r, **kw: order.append("low"), priority=70, once=True)
    runner.on("after_train_iter", lambda r, **kw: order.append("highest"), priority="HIGHEST",
              once=True)
    runner.on("after_train_iter", lambda r, **kw: order.append("normal"), once=True)
    runner.train()
    assert order == ["highest", "normal", "low"]


def test_handles_remove_and_decorator_form(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1)
    seen: list[int] = []

    @runner.on("after_train_iter", every=2)
    def record(r, batch_idx, data_batch=None, outputs=None):
        seen.append(batch_idx)

    assert record(runner, 7) is None and seen == [7]  # the handle still calls the function
    with runner.on("after_train_iter", lambda r, **kw: seen.append(-1)) as temporary:
        pass
    assert temporary.removed
    runner.train()
    assert seen == [7, 1, 3, 5]
    record.remove()
    record.remove()  # idempotent
    assert record.hook not in runner.hooks.hooks


def test_an_unknown_stage_suggests_the_closest(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1)
    with pytest.raises(ConfigError, match="unknown Runner stage 'after_train_iteration'; "
                                          "did you mean 'after_train_iter'"):
        runner.on("after_train_iteration", print)
    with pytest.raises(ConfigError, match="every must be an int >= 1"):
        runner.on("after_train_iter", print, every=0)
    with pytest.raises(ConfigError, match="invalid priority"):
        runner.on("after_train_iter", print, priority="URGENT")
    with pytest.raises(ConfigError, match="must be callable"):
        ClosureHook("before_run", "print")
    with pytest.raises(ConfigError, match="when must be a callable"):
        ClosureHook("before_run", print, when=True)


def test_an_error_in_fn_names_fn_and_the_stage(tmp_path):
    def broken(r, metrics):
        raise ValueError("no metrics for you")

    runner = make_runner(tmp_path, max_epochs=1)
    runner.on("after_val_epoch", broken)
    with pytest.raises(HookError, match=r"broken failed at after_val_epoch: ValueError") as info:
        runner.train()
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.hook is broken


def test_built_from_a_config_dict(tmp_path):
    seen: list[int] = []
    hook = HOOKS.build({"type": "ClosureHook", "stage": "after_train_epoch",
                        "fn": lambda r: seen.append(r.epoch), "priority": "LOW"})
    runner = make_runner(tmp_path, hooks=[hook, {"type": "ClosureHook", "stage": "before_run",
                                                 "fn": lambda r: seen.append(-1)}])
    assert runner.hooks.priority_of(hook) == 70
    runner.train()
    assert seen == [-1, 0, 1, 2]


def test_resume_keeps_the_every_count_and_once(tmp_path):
    def closures(log: list):
        return [
            ClosureHook("after_train_iter", lambda r, **kw: log.append(("every", r.iter + 1)),
                        every=4),
            ClosureHook("after_val_epoch", lambda r, metrics: log.append(("once", r.epoch)),
                        once=True),
        ]

    whole_log: list = []
    whole = make_runner(tmp_path / "whole", hooks=closures(whole_log))
    whole.train()
    assert whole_log == [("every", 4), ("once", 1), ("every", 8), ("every", 12), ("every", 16)]

    log: list = []
    first = make_runner(tmp_path / "run", hooks=[*closures(log), Explode(10)])
    with pytest.raises(HookError, match="stop here"):
        first.train()
    resumed = make_runner(tmp_path / "run", hooks=closures(log),
                          resume=tmp_path / "run" / "iter_10.pth")
    resumed.train()
    assert log == whole_log
    assert_equal_states(snapshot(resumed.model), snapshot(whole.model))
