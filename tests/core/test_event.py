import asyncio

import pytest

from hookline.core import ConfigError, Event, HookError, HookHandle, Priority


def recorder(log, label, result=None):
    def hook(*args, **kwargs):
        log.append(label)
        return result
    hook.__qualname__ = f"hook_{label}"
    return hook


# -- registration and order ------------------------------------------------------
def test_register_returns_a_handle_and_emit_returns_the_results():
    event = Event("saved")
    handle = event.register(lambda path: f"backed up {path}")
    assert isinstance(handle, HookHandle)
    assert event.emit("model.pth") == ["backed up model.pth"]


def test_emit_passes_positional_and_keyword_arguments():
    event = Event("saved")
    event.register(lambda path, *, size: (path, size))
    assert event.emit("a.pth", size=3) == [("a.pth", 3)]


def test_emit_without_hooks_returns_an_empty_list():
    assert Event("quiet").emit(1, x=2) == []


def test_hooks_run_in_priority_order():
    log = []
    event = Event("e")
    event.register(recorder(log, "low"), priority="LOW")
    event.register(recorder(log, "highest"), priority=Priority.HIGHEST)
    event.register(recorder(log, "normal"))
    event.register(recorder(log, "int 45"), priority=45)
    event.emit()
    assert log == ["highest", "int 45", "normal", "low"]


def test_equal_priorities_keep_registration_order():
    log = []
    event = Event("e")
    for label in "abcd":
        event.register(recorder(log, label), priority="HIGH" if label in "bd" else "NORMAL")
    event.emit()
    assert log == ["b", "d", "a", "c"]


def test_len_and_hooks_list_the_callables_in_call_order():
    event = Event("e")
    first, second = (lambda: 1), (lambda: 2)
    event.register(second)
    event.register(first, priority="HIGHEST")
    assert len(event) == 2
    assert event.hooks == (first, second)


def test_same_callable_may_be_registered_twice():
    event = Event("e")
    event.register(abs)
    event.register(abs)
    assert event.emit(-3) == [3, 3]


def test_bare_decorator_yields_a_callable_removable_handle():
    event = Event("e")

    @event.register
    def double(x):
        return 2 * x

    assert isinstance(double, HookHandle)
    assert double(4) == 8  # still callable
    assert event.emit(1) == [2]
    double.remove()
    assert event.emit(1) == []


def test_decorator_with_options():
    log = []
    event = Event("e")
    event.register(recorder(log, "normal"))

    @event.register(priority="HIGH", every=2)
    def early():
        log.append("early")

    event.emit()
    event.emit()
    assert log == ["normal", "early", "normal"]
    assert early.hook.__name__ == "early"


@pytest.mark.parametrize(
    "options",
    [
        {"priority": "URGENT"},
        {"priority": 101},
        {"every": 0},
        {"every": -2},
        {"every": 1.5},
        {"every": True},
        {"when": "x > 1"},
        {"once": 1},
    ],
)
def test_invalid_options_are_config_errors(options):
    event = Event("e")
    with pytest.raises(ConfigError):
        event.register(print, **options)
    with pytest.raises(ConfigError):
        event.register(**options)  # the decorator form checks before decorating
    assert len(event) == 0


def test_a_hook_must_be_callable():
    with pytest.raises(ConfigError, match="callable"):
        Event("e").register("print")


def test_repr_names_the_event():
    event = Event("saved")
    event.register(print)
    assert repr(event) == "<Event 'saved' with 1 hook(s)>"


# -- emit_first ----------------------------------------------------------------------
def test_emit_first_returns_the_first_non_none_result_and_stops():
    log = []
    event = Event("lookup")
    event.register(recorder(log, "none"), priority="HIGHEST")
    event.register(recorder(log, "zero", result=0), priority="HIGH")
    event.register(recorder(log, "later", result="later"))
    assert event.emit_first() == 0  # falsy but not None
    assert log == ["none", "zero"]


def test_emit_first_returns_none_when_every_hook_does():
    event = Event("lookup")
    event.register(lambda: None)
    assert event.emit_first() is None
    assert Event("empty").emit_first() is None


def test_emit_first_passes_arguments_and_skips_filtered_hooks():
    event = Event("lookup")
    event.register(lambda key: "never", when=lambda key: False, priority="HIGHEST")
    event.register(lambda key: key.upper())
    assert event.emit_first("k") == "K"


# -- filters --------------------------------------------------------------------------
def test_once_runs_one_time_and_marks_the_handle_removed():
    log = []
    event = Event("e")
    handle = event.register(recorder(log, "once"), once=True)
    assert event.emit() == [None]
    assert event.emit() == []
    assert log == ["once"]
    assert handle.removed and len(event) == 0


def test_once_removes_the_hook_before_calling_it():
    event = Event("e")
    seen = []

    def hook():
        seen.append(len(event))
        event.emit()  # re-entrant emission does not call it again

    event.register(hook, once=True)
    event.emit()
    assert seen == [0]


def test_once_hook_that_raises_is_still_removed():
    event = Event("e")

    def boom():
        raise ValueError("boom")

    handle = event.register(boom, once=True)
    with pytest.raises(HookError):
        event.emit()
    assert handle.removed and event.emit() == []


def test_every_runs_on_the_nth_2nth_emission():
    calls = []
    event = Event("e")
    event.register(lambda i: calls.append(i), every=3)
    for i in range(1, 10):
        event.emit(i)
    assert calls == [3, 6, 9]


def test_every_counts_the_emissions_each_hook_sees():
    calls = []
    event = Event("e")
    event.emit()  # before registration: not seen
    event.register(lambda: calls.append("x"), every=2)
    event.emit()
    event.emit()
    assert calls == ["x"]


def test_skipped_hooks_leave_no_result():
    event = Event("e")
    event.register(lambda: "always")
    event.register(lambda: "even", every=2)
    assert event.emit() == ["always"]
    assert event.emit() == ["always", "even"]


def test_once_with_every_runs_on_the_nth_emission_then_is_removed():
    calls = []
    event = Event("e")
    handle = event.register(lambda i: calls.append(i), once=True, every=2)
    for i in range(1, 6):
        event.emit(i)
    assert calls == [2]
    assert handle.removed


def test_when_runs_the_hook_only_if_the_predicate_is_true():
    calls = []
    event = Event("e")
    event.register(lambda x, *, scale: calls.append(x * scale),
                   when=lambda x, *, scale: x > 1)
    for x in range(4):
        event.emit(x, scale=10)
    assert calls == [20, 30]


def test_when_is_checked_on_the_emissions_every_lets_through():
    checked, calls = [], []
    event = Event("e")

    def predicate(i):
        checked.append(i)
        return i != 4

    event.register(lambda i: calls.append(i), every=2, when=predicate)
    for i in range(1, 7):
        event.emit(i)
    assert checked == [2, 4, 6]
    assert calls == [2, 6]


def test_once_with_when_waits_for_the_predicate():
    calls = []
    event = Event("e")
    handle = event.register(lambda i: calls.append(i), once=True, when=lambda i: i >= 3)
    for i in range(6):
        event.emit(i)
    assert calls == [3] and handle.removed


def test_hooks_report_the_user_callable_not_a_filter_wrapper():
    def hook():
        return None

    event = Event("e")
    event.register(hook, every=2)
    assert event.hooks == (hook,)


# -- removal and addition during an emission ---------------------------------------------------
def test_a_hook_removed_during_an_emission_is_not_called_later_in_it():
    log = []
    event = Event("e")
    event.register(lambda: later.remove(), priority="HIGH")
    later = event.register(recorder(log, "later"))
    assert event.emit() == [None]
    assert log == [] and later.removed and len(event) == 1


def test_a_hook_may_remove_itself_during_an_emission():
    log = []
    event = Event("e")

    def once_by_hand():
        log.append("self")
        handle.remove()

    handle = event.register(once_by_hand)
    event.register(recorder(log, "next"))
    event.emit()
    event.emit()
    assert log == ["self", "next", "next"]


def test_removing_an_earlier_hook_during_an_emission_keeps_the_later_ones():
    log = []
    event = Event("e")
    first = event.register(recorder(log, "first"), priority="HIGH")
    event.register(lambda: first.remove())
    event.register(recorder(log, "last"), priority="LOW")
    event.emit()
    event.emit()
    assert log == ["first", "last", "last"]


def test_a_hook_added_during_an_emission_runs_from_the_next_one():
    log = []
    event = Event("e")

    def add_one():
        log.append("adder")
        event.register(recorder(log, "added"), priority="LOWEST")

    adder = event.register(add_one, once=True)
    event.emit()
    assert log == ["adder"]
    event.emit()
    assert log == ["adder", "added"]
    assert adder.removed


def test_removal_inside_a_nested_emission_applies_to_the_outer_one():
    log = []
    event = Event("e")

    def outer(depth):
        if depth == 0:
            event.emit(1)  # the nested emission removes `victim`
        return "outer"

    event.register(outer, priority="HIGHEST")
    event.register(lambda depth: victim.remove() if depth == 1 else None, priority="HIGH")
    victim = event.register(lambda depth: log.append(depth))
    event.emit(0)
    assert log == []


def test_clear_removes_every_hook_and_their_handles_know_it():
    event = Event("e")
    handles = [event.register(print), event.register(repr, once=True)]
    event.clear()
    assert len(event) == 0 and event.emit() == []
    assert all(handle.removed for handle in handles)


def test_clear_during_an_emission_stops_it():
    log = []
    event = Event("e")
    event.register(event.clear, priority="HIGH")
    event.register(recorder(log, "later"))
    event.emit()
    assert log == []


# -- errors ---------------------------------------------------------------------------------
def test_an_exception_in_a_hook_becomes_a_hook_error_naming_hook_and_point():
    event = Event("saved")

    def broken_backup(path):
        raise OSError("disk full")

    event.register(broken_backup)
    with pytest.raises(HookError) as info:
        event.emit("model.pth")
    err = info.value
    assert "test_an_exception_in_a_hook_becomes_a_hook_error_naming_hook_and_point" \
           ".<locals>.broken_backup" in str(err)
    assert "saved" in str(err) and "disk full" in str(err)
    assert isinstance(err.__cause__, OSError)
    assert err.hook is broken_backup
    assert err.point == "saved"


def test_hooks_after_a_failing_hook_are_not_called():
    log = []
    event = Event("e")
    event.register(lambda: 1 / 0, priority="HIGH")
    event.register(recorder(log, "later"))
    with pytest.raises(HookError):
        event.emit()
    assert log == []


def test_a_failing_filtered_hook_is_reported_as_the_user_hook():
    def flaky(x):
        raise ValueError(x)

    event = Event("e")
    event.register(flaky, when=lambda x: True, every=1)
    with pytest.raises(HookError) as info:
        event.emit(1)
    assert info.value.hook is flaky


def test_emit_first_wraps_errors_too():
    event = Event("lookup")
    event.register(lambda: {}["missing"])
    with pytest.raises(HookError) as info:
        event.emit_first()
    assert isinstance(info.value.__cause__, KeyError)
    assert info.value.point == "lookup"


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_non_exception_errors_pass_through_unwrapped(error):
    def stop():
        raise error()

    event = Event("e")
    event.register(stop)
    with pytest.raises(error):
        event.emit()
    with pytest.raises(error):
        event.emit_first()
    with pytest.raises(error):
        asyncio.run(event.emit_async())


def test_a_hook_error_from_a_nested_hook_passes_through_unchanged():
    inner = Event("inner")
    outer = Event("outer")

    def broken():
        raise ValueError("deep")

    inner.register(broken)
    outer.register(lambda: inner.emit())
    with pytest.raises(HookError) as info:
        outer.emit()
    assert info.value.point == "inner"
    assert info.value.hook is broken


# -- async -------------------------------------------------------------------------------------
def test_emit_async_awaits_coroutine_hooks_and_calls_plain_ones_in_order():
    log = []
    event = Event("fetched")

    async def store(url):
        await asyncio.sleep(0)
        log.append("store")
        return f"stored {url}"

    event.register(store)
    event.register(recorder(log, "plain", result="plain"), priority="HIGH")
    results = asyncio.run(event.emit_async("x"))
    assert results == ["plain", "stored x"]
    assert log == ["plain", "store"]


def test_emit_async_honours_filters():
    calls = []
    event = Event("e")

    async def hook(i):
        calls.append(i)

    event.register(hook, every=2, when=lambda i: i < 5)

    async def main():
        return [await event.emit_async(i) for i in range(1, 8)]

    results = asyncio.run(main())
    assert calls == [2, 4]
    assert results == [[], [None], [], [None], [], [], []]


def test_emit_async_wraps_errors_of_coroutine_hooks():
    event = Event("fetched")

    async def broken():
        await asyncio.sleep(0)
        raise ConnectionError("offline")

    event.register(broken)
    with pytest.raises(HookError) as info:
        asyncio.run(event.emit_async())
    assert isinstance(info.value.__cause__, ConnectionError)
    assert info.value.hook is broken and info.value.point == "fetched"


def test_emit_async_with_removal_during_the_emission():
    log = []
    event = Event("e")

    async def remover():
        later.remove()

    event.register(remover, priority="HIGH")
    later = event.register(recorder(log, "later"))
    asyncio.run(event.emit_async())
    assert log == []


def test_sync_emit_refuses_coroutine_hooks():
    event = Event("e")

    async def hook():
        return None

    event.register(hook)
    with pytest.raises(ConfigError, match="emit_async"):
        event.emit()
    with pytest.raises(ConfigError, match="emit_async"):
        event.emit_first()
