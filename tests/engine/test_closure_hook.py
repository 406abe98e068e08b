"""ClosureHook: a plain function on one Runner stage with every / once / when, errors that
name the function, and its counters carried through checkpoints."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, HookError, Runner
from hookline.core import Priority
from hookline.engine import ClosureHook
from hookline.engine.hook_table import HookTable
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)


def call_iters(hook: ClosureHook, count: int) -> None:
    for i in range(count):
        hook.after_train_iter(None, batch_idx=i, data_batch=None, outputs=None)


def test_fn_gets_the_runner_and_the_stage_arguments():
    seen: list[tuple] = []
    hook = ClosureHook("after_train_iter", lambda runner, **kw: seen.append((runner, kw)))
    marker = object()
    hook.after_train_iter(marker, batch_idx=4, data_batch="b", outputs={"loss": 1})
    assert seen == [(marker, {"batch_idx": 4, "data_batch": "b", "outputs": {"loss": 1}})]
    assert hook.triggered_stages() == ["after_train_iter"]


def test_every_calls_fn_on_every_nth_call_of_the_stage():
    seen: list[int] = []
    hook = ClosureHook("after_train_iter", lambda runner, batch_idx, **kw: seen.append(batch_idx),
                       every=3)
    call_iters(hook, 7)
    assert seen == [2, 5] and hook.calls == 7


def test_once_calls_fn_once_and_when_filters():
    once: list[int] = []
    hook = ClosureHook("after_train_iter", lambda runner, batch_idx, **kw: once.append(batch_idx),
                       once=True, when=lambda runner, batch_idx, **kw: batch_idx >= 2)
    call_iters(hook, 6)
    assert once == [2] and hook.done
    odd: list[int] = []
    hook = ClosureHook("after_train_iter", lambda runner, batch_idx, **kw: odd.append(batch_idx),
                       when=lambda runner, batch_idx, **kw: batch_idx % 2 == 1)
    call_iters(hook, 6)
    assert odd == [1, 3, 5]


def test_every_and_when_together_check_when_on_the_calls_every_lets_through():
    seen: list[int] = []
    hook = ClosureHook("after_train_iter", lambda runner, batch_idx, **kw: seen.append(batch_idx),
                       every=2, when=lambda runner, batch_idx, **kw: batch_idx != 3)
    call_iters(hook, 8)
    assert seen == [1, 5, 7]


def test_a_once_hook_on_a_runner_removes_itself(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(12, 3)
    runner = Runner(torch.nn.Linear(3, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2, work_dir=tmp_path, device="cpu",
                    train_dataloader=DataLoader(TensorDataset(x, (x[:, 0] > 0).long()),
                                                batch_size=4),
                    default_hooks={"logger": None, "progress": None, "checkpoint": None})
    once: list[int] = []
    every: list[int] = []
    handle = runner.on("after_train_iter", lambda r, **kw: once.append(r.iter), once=True)
    runner.on("after_train_iter", lambda r, **kw: every.append(r.iter + 1), every=2)
    runner.train()
    assert once == [0] and handle.removed and handle.hook not in runner.hooks.hooks
    assert every == [2, 4, 6]


def test_an_error_in_fn_is_a_hook_error_naming_fn_and_the_stage():
    def boom(runner, **kwargs):
        raise ValueError("broken callback")

    hook = ClosureHook("after_train_epoch", boom)
    with pytest.raises(HookError, match="boom failed at after_train_epoch: ValueError: "
                                        "broken callback") as info:
        hook.after_train_epoch(None)
    assert info.value.hook is boom and info.value.point == "after_train_epoch"
    assert isinstance(info.value.__cause__, ValueError)
    # through a hook table the error arrives as it is, not wrapped twice
    table = HookTable()
    table.add(hook)
    with pytest.raises(HookError) as info:
        table.call(None, "after_train_epoch")
    assert info.value.hook is boom and isinstance(info.value.__cause__, ValueError)


def test_an_error_in_when_is_a_hook_error_naming_when():
    def fn(runner, **kwargs):
        pass

    def when(runner, **kwargs):
        raise KeyError("no such metric")

    hook = ClosureHook("after_val_epoch", fn, when=when)
    with pytest.raises(HookError, match="when failed at after_val_epoch") as info:
        hook.after_val_epoch(None, metrics={})
    assert isinstance(info.value.__cause__, KeyError)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"stage": "after_train_itr"}, "did you mean 'after_train_iter'"),
    ({"fn": 3}, "fn must be callable"),
    ({"every": 0}, "every must be an int >= 1"),
    ({"once": "yes"}, "once must be True or False"),
    ({"when": 1}, "when must be a callable"),
    ({"once": 5}, r"at call number 5, pass every=5, once=True"),
    ({"stage": ["after_train_epoch", "after_train"]}, "register it once per stage"),
    ({"stage": "ITERATION_COMPLETED"}, "Ignite's ITERATION_COMPLETED is the stage 'after_train_iter'"),
    ({"fn": lambda runner, step: None}, "requires 'step', which after_train_iter does not pass"),
    ({"when": lambda runner, epoch: True}, "when .* requires 'epoch'"),
    ({"priority": "urgent"}, "invalid priority"),
])
def test_bad_arguments_are_config_errors(kwargs, message):
    args = {"stage": "after_train_iter", "fn": print, **kwargs}
    with pytest.raises(ConfigError, match=message):
        ClosureHook(args.pop("stage"), args.pop("fn"), **args)


def test_priority_name_or_int():
    assert ClosureHook("before_run", print).priority == "NORMAL"
    assert ClosureHook("before_run", print, priority="high").priority == Priority.HIGH
    assert ClosureHook("before_run", print, priority=45).priority == 45


def test_only_its_own_stage_is_overridden():
    seen: list[str] = []
    hook = ClosureHook("before_train_epoch", lambda runner: seen.append("epoch"))
    hook.after_train_epoch(None)  # the base class's no-op
    table = HookTable()
    table.add(hook)
    assert [s for s, methods in table.stages.items() if methods] == ["before_train_epoch"]
    table.call(None, "before_train_epoch")
    assert seen == ["epoch"]


def test_calling_the_hook_calls_fn_directly():
    hook = ClosureHook("before_run", lambda runner, n=1: n * 2, every=5)
    assert hook(None, n=21) == 42 and hook.calls == 0


def test_state_dict_round_trip_keeps_the_every_count():
    def fn(runner, **kwargs):
        seen.append(runner)

    seen: list[int] = []
    assert ClosureHook("after_train_iter", fn).state_dict() == {}  # nothing to keep
    hook = ClosureHook("after_train_iter", fn, every=3)
    call_iters(hook, 4)
    state = hook.state_dict()
    assert state == {"calls": 4, "done": False}
    assert hook.state_key == ClosureHook("after_train_iter", fn, every=3).state_key
    assert "after_train_iter" in hook.state_key and "fn" in hook.state_key

    fresh = ClosureHook("after_train_iter", fn, every=3)
    fresh.load_state_dict(state)
    seen.clear()
    for i in range(5):
        fresh.after_train_iter(i, batch_idx=i)
    assert seen == [1, 4]  # calls 6 and 9 of the stage, as if never interrupted


def test_state_dict_round_trip_keeps_a_finished_once_hook_finished():
    seen: list[object] = []
    hook = ClosureHook("after_train_epoch", lambda runner: seen.append(runner), once=True)
    hook.after_train_epoch("first")
    assert hook.state_dict() == {"calls": 1, "done": True}
    fresh = ClosureHook("after_train_epoch", lambda runner: seen.append(runner), once=True)
    fresh.load_state_dict(hook.state_dict())
    fresh.after_train_epoch("again")
    assert seen == ["first"] and fresh.done


def test_fn_and_when_get_only_the_arguments_they_name_as_ignite_handlers_do(tmp_path):
    """Ignite's handlers take ``engine`` alone or nothing; fitted once, at registration."""
    data = TensorDataset(torch.randn(16, 3), torch.randint(0, 2, (16,)))
    runner = Runner(torch.nn.Linear(3, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2, work_dir=tmp_path,
                    train_dataloader=DataLoader(data, batch_size=4),
                    default_hooks={"logger": None, "checkpoint": None, "progress": None})
    seen: list = []
    runner.on("after_train_iter", lambda engine: seen.append(("iter", engine.iter)), every=4)
    runner.on("after_train_epoch", lambda: seen.append("epoch"))
    runner.on("after_train_iter", lambda batch_idx: seen.append(("batch", batch_idx)),
              when=lambda runner: runner.iter == 5)
    runner.on("after_train_iter", lambda runner, outputs: seen.append(sorted(outputs)), once=True)
    runner.train()
    assert seen == [["loss"], ("iter", 3), "epoch", ("batch", 1), ("iter", 7), "epoch"]


def test_call_hook_with_an_unknown_stage_is_a_config_error(tmp_path):
    data = TensorDataset(torch.randn(4, 3), torch.randint(0, 2, (4,)))
    runner = Runner(torch.nn.Linear(3, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1, work_dir=tmp_path,
                    train_dataloader=DataLoader(data, batch_size=4))
    with pytest.raises(ConfigError, match="unknown Runner stage 'backward_started'"):
        runner.call_hook("backward_started")
    with pytest.raises(ConfigError, match="did you mean 'after_train_epoch'"):
        runner.call_hook("after_train_epch")
