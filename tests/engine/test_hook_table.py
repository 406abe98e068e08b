"""HookTable: priority order (stable, defaults first on ties), per-stage call lists, removal,
registration errors, HookError wrapping, on_exception isolation, profiling and the table text."""

from __future__ import annotations

import inspect
import logging
import warnings

import pytest

from hookline import ConfigError, Hook, HookError, Priority
from hookline.engine.hook_table import HookProfile, HookTable
from hookline.engine.stage_lint import HookStageWarning


class Named(Hook):
    """Appends its name to ``log`` in before_train_iter."""

    def __init__(self, name: str, log: list, priority="NORMAL") -> None:
        self.name, self.log, self.priority = name, log, priority

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self.log.append(self.name)


class Epochs(Hook):
    def after_train_epoch(self, runner):
        pass


def test_hooks_are_called_by_priority_with_ties_in_registration_order_defaults_first():
    log: list[str] = []
    table = HookTable()
    table.add(Named("normal-1", log))
    table.add(Named("low", log, "LOW"))
    table.add(Named("forced-high", log, "LOWEST"), priority="HIGH")  # the argument wins
    table.add(Named("default-normal", log), is_default=True, key="timer")
    table.add(Named("int-45", log, 45))
    table.add(Named("normal-2", log))
    table.call(None, "before_train_iter", batch_idx=0, data_batch=None)
    assert log == ["forced-high", "int-45", "default-normal", "normal-1", "normal-2", "low"]
    assert [h.name for h in table.hooks] == log
    assert table.priority_of(table.hooks[0]) == Priority.HIGH
    assert table.priority_of(table.hooks[1]) == 45


def test_each_stage_calls_only_the_hooks_that_override_it():
    log: list[str] = []
    table = HookTable()
    named, epochs = Named("a", log), Epochs()
    table.add(named)
    table.add(epochs)
    assert [m.__self__ for m in table.stages["before_train_iter"]] == [named]
    assert [m.__self__ for m in table.stages["after_train_epoch"]] == [epochs]
    assert table.stages["before_run"] == ()
    table.call(None, "before_run")  # nobody: nothing happens
    assert log == []


def test_a_handle_removes_its_hook_from_every_stage():
    log: list[str] = []
    table = HookTable()
    handle = table.add(Named("gone", log))
    table.add(Named("kept", log))
    handle.remove()
    table.call(None, "before_train_iter", batch_idx=0)
    assert log == ["kept"] and len(table.hooks) == 1
    handle.remove()  # twice: harmless
    with pytest.raises(KeyError):
        table.priority_of(handle.hook)


def test_registration_errors_are_config_errors():
    table = HookTable()
    hook = Epochs()
    table.add(hook)
    with pytest.raises(ConfigError, match="already registered"):
        table.add(hook)
    with pytest.raises(ConfigError, match="must be a hookline.Hook instance"):
        table.add(lambda runner: None)
    with pytest.raises(ConfigError, match="invalid priority"):
        table.add(Epochs(), priority="URGENT")
    assert table.hooks == [hook]


def test_a_failing_hook_becomes_a_hook_error_naming_hook_and_stage():
    class Broken(Hook):
        def after_train_epoch(self, runner):
            raise ZeroDivisionError("no epochs")

    log: list[str] = []
    table = HookTable()
    broken = Broken()
    table.add(broken)
    table.add(Named("after", log))
    with pytest.raises(HookError, match="Broken failed at after_train_epoch") as info:
        table.call(None, "after_train_epoch")
    assert info.value.hook is broken and info.value.point == "after_train_epoch"
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_a_hook_error_raised_inside_a_hook_passes_through_unchanged():
    inner = HookError(print, "inner_point", ValueError("deep"))

    class Relays(Hook):
        def before_run(self, runner):
            raise inner

    table = HookTable()
    table.add(Relays())
    with pytest.raises(HookError) as info:
        table.call(None, "before_run")
    assert info.value is inner


def test_every_on_exception_hook_runs_even_when_one_fails(caplog):
    seen: list[str] = []

    class Fails(Hook):
        priority = "HIGH"

        def on_exception(self, runner, exception):
            seen.append("fails")
            raise RuntimeError("handler broke")

    class Records(Hook):
        def on_exception(self, runner, exception):
            seen.append(str(exception))

    table = HookTable()
    table.add(Records())
    table.add(Fails())
    logger = logging.getLogger("test_hook_table")
    with caplog.at_level(logging.ERROR, logger="test_hook_table"):
        table.call_on_exception(None, ValueError("training broke"), logger)
    assert seen == ["fails", "training broke"]
    assert "on_exception hook Fails failed" in caplog.text and "handler broke" in caplog.text


def test_by_key_lists_the_default_hooks_by_their_key():
    table = HookTable()
    timer, mine = Epochs(), Epochs()
    table.add(timer, is_default=True, key="timer")
    table.add(mine)
    assert table.by_key() == {"timer": timer}


def test_profiling_counts_calls_per_hook_and_stage():
    log: list[str] = []
    table = HookTable()
    first, second = Named("a", log), Named("b", log)
    table.add(first)
    table.add(second)
    report = table.profile_report()
    assert isinstance(report, HookProfile) and report == [] and not report.enabled
    assert "profiling is off" in str(report)
    table.start_profiling()
    for i in range(3):
        table.call(None, "before_train_iter", batch_idx=i)
    report = table.profile_report()
    assert report.enabled
    counts = {(row.hook, row.stage): row.calls for row in report}
    assert counts == {("Named", "before_train_iter"): 3, ("Named.2", "before_train_iter"): 3}
    assert all(row.total_s >= 0 and row.mean_s >= 0 for row in report)
    assert "total" in str(report) and log == ["a", "b"] * 3
    table.stop_profiling()
    assert not table.profile_report().enabled


def test_profiling_still_wraps_errors():
    class Broken(Hook):
        def before_run(self, runner):
            raise KeyError("x")

    table = HookTable()
    table.add(Broken())
    table.start_profiling()
    with pytest.raises(HookError, match="Broken failed at before_run"):
        table.call(None, "before_run")
    assert table.profile_report().as_dict()["Broken"]["before_run"][0] == 1


def test_the_table_text_lists_stages_with_hooks_and_priorities():
    table = HookTable()
    table.add(Epochs(), priority="VERY_LOW")
    table.add(Named("x", [], 45))
    lines = table.table().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("before_train_iter") and "Named(45)" in lines[0]
    assert lines[1].startswith("after_train_epoch") and "Epochs(VERY_LOW)" in lines[1]


# -- signatures decided at registration, stage-name typos ------------------------------------------
class RunnerOnly(Hook):
    """mmcv's style: every stage takes only ``runner``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def after_train_iter(self, runner):
        self.calls.append(("after_train_iter", runner))

    def after_val_epoch(self, runner):
        self.calls.append(("after_val_epoch", runner))


def test_a_stage_taking_only_runner_is_called_with_runner_alone():
    hook = RunnerOnly()
    table = HookTable()
    table.add(hook)
    table.call("R", "after_train_iter", batch_idx=3, data_batch=None, outputs={"loss": 1})
    table.call("R", "after_val_epoch", metrics={"acc": 1.0})
    assert hook.calls == [("after_train_iter", "R"), ("after_val_epoch", "R")]
    assert [m.__self__ for m in table.stages["after_train_iter"]] == [hook]


def test_a_stage_naming_some_arguments_gets_those():
    seen = []

    class Partial(Hook):
        def after_train_iter(self, runner, outputs):
            seen.append(outputs)

    table = HookTable()
    table.add(Partial())
    table.call(None, "after_train_iter", batch_idx=0, data_batch=None, outputs={"loss": 2})
    assert seen == [{"loss": 2}]


def test_signatures_are_inspected_at_registration_not_per_call(monkeypatch):
    hook = RunnerOnly()
    table = HookTable()
    table.add(hook)
    calls = []
    original = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda *a, **k: calls.append(a) or original(*a, **k))
    for i in range(50):
        table.call(None, "after_train_iter", batch_idx=i, data_batch=None, outputs=None)
    assert calls == [] and len(hook.calls) == 50


def test_a_full_signature_is_called_directly_without_a_wrapper():
    table = HookTable()
    table.add(Named("n", []))
    (method,) = table.stages["before_train_iter"]
    assert method.__func__ is Named.before_train_iter  # the bound method itself


def test_a_stage_method_set_on_an_instance_is_dispatched():
    seen = []
    hook = Hook()
    hook.after_train_epoch = lambda runner: seen.append(runner)
    table = HookTable()
    table.add(hook)
    table.call("R", "after_train_epoch")
    assert seen == ["R"] and hook.get_triggered_stages() == ["after_train_epoch"]


def test_methods_that_look_like_stages_but_are_none_warn_once_at_registration():
    class Typos(Hook):
        def on_train_epoch_end(self, runner):
            pass

        def after_epochs(self, runner):
            pass

        def before_val_iteration(self, runner, batch_idx, data_batch=None):
            pass

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            pass  # a real stage: no warning

        def momentum_update(self, model):
            pass  # not stage-like: no warning

    with pytest.warns(HookStageWarning) as caught:
        HookTable().add(Typos())
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 3
    assert "Typos.after_epochs" in messages[0] and "did you mean 'after_train_epoch'" in messages[0]
    assert "before_val_iteration" in messages[1] and "'before_val_iter'" in messages[1]
    assert "on_train_epoch_end" in messages[2] and "'after_train_epoch'" in messages[2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HookTable().add(Typos())  # the same class is checked once


def test_get_triggered_stages_and_stages_are_mmengines():
    assert Hook.stages[:3] == ("before_run", "after_load_checkpoint", "before_train")
    assert Epochs().get_triggered_stages() == Epochs().triggered_stages() == ["after_train_epoch"]


def test_the_table_is_a_list_of_hooks_in_call_order_as_mmengines_runner_hooks():
    table = HookTable()
    low, high = Epochs(), Named("high", [], "HIGH")
    table.add(low, priority="LOW")
    table.add(high)
    assert list(table) == [high, low] and len(table) == 2 and table[0] is high
    assert [type(h).__name__ for h in table] == ["Named", "Epochs"]


class StaticStage(Hook):
    calls: list = []

    @staticmethod
    def after_train_epoch(runner):
        StaticStage.calls.append(("static", runner))


class ClassStage(Hook):
    calls: list = []

    @classmethod
    def after_train_epoch(cls, runner):
        cls.calls.append(("class", runner))


def test_static_and_class_stage_methods_are_called_with_runner_and_listed():
    table = HookTable()
    table.add(StaticStage())
    table.add(ClassStage(), priority="LOW")
    table.call("the runner", "after_train_epoch")
    assert StaticStage.calls == [("static", "the runner")]
    assert ClassStage.calls == [("class", "the runner")]
    assert table.table().split() == ["after_train_epoch", "StaticStage(NORMAL),", "ClassStage(LOW)"]


def test_a_stage_method_requiring_what_the_stage_does_not_pass_is_refused_at_registration():
    class Renamed(Hook):
        def after_train_iter(self, runner, idx, batch=None, out=None):
            pass

    with pytest.raises(ConfigError, match=r"Renamed.after_train_iter requires 'idx', which the "
                       r"Runner does not pass: after_train_iter gets runner, then batch_idx, "
                       r"data_batch, outputs by keyword"):
        HookTable().add(Renamed())

    class Extra(Hook):
        def before_run(self, runner, config):
            pass

    with pytest.raises(ConfigError, match=r"requires 'config'.*before_run gets runner only"):
        HookTable().add(Extra())

    class Optional(Hook):  # parameters with defaults are fine: mmcv's habit of fewer names
        def after_train_iter(self, runner, batch_idx=0, extra=None):
            pass

    HookTable().add(Optional())


def test_a_hook_running_someone_elses_object_is_named_by_its_table_label():
    class Runs(Hook):
        def __init__(self, name: str) -> None:
            self.table_label = f"Runs[{name}]"

        def after_train_epoch(self, runner) -> None:
            pass

    table = HookTable()
    table.add(Runs("EarlyStopping"))
    table.add(Runs("CSVLogger"))
    assert table.table().split() == ["after_train_epoch", "Runs[EarlyStopping](NORMAL),",
                                     "Runs[CSVLogger](NORMAL)"]
