"""Event.emit is a function generated for the current hooks: every call shape, removal, kept emitters."""

from __future__ import annotations

import gc
import weakref

import pytest

from hookline.core import ConfigError, Event, HookError
from hookline.core._emitter import MAX_UNROLLED

# positional arguments 0 to 3 take the unrolled code; the rest the generic loop
SHAPES = [((), {}), ((1,), {}), ((1, 2), {}), ((1, 2, 3), {}), ((1, 2, 3, 4), {}),
          ((), {"k": 5}), ((1,), {"k": 5}), ((None, None), {})]
SIZES = [1, 2, 8, MAX_UNROLLED, MAX_UNROLLED + 1]


def numbered(log: list, index: int):
    def hook(*args, **kwargs):
        log.append((index, args, kwargs))
        return index
    hook.__qualname__ = f"hook_{index}"
    return hook


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(("args", "kwargs"), SHAPES)
def test_every_hook_gets_the_arguments_in_order_and_emit_returns_their_results(n, args, kwargs):
    log: list = []
    event = Event("e")
    for index in range(n):
        event.register(numbered(log, index))
    assert event.emit(*args, **kwargs) == list(range(n))
    assert log == [(index, args, kwargs) for index in range(n)]


@pytest.mark.parametrize(("args", "kwargs"), SHAPES)
def test_a_hook_removed_during_an_emission_is_not_called_later_in_it(args, kwargs):
    log: list = []
    event = Event("e")
    handles = [event.register(numbered(log, index)) for index in range(6)]
    event.register(lambda *a, **k: handles[4].remove(), priority="HIGH")
    assert event.emit(*args, **kwargs) == [None, 0, 1, 2, 3, 5]
    assert [entry[0] for entry in log] == [0, 1, 2, 3, 5]
    assert event.emit(*args, **kwargs) == [None, 0, 1, 2, 3, 5]


@pytest.mark.parametrize(("args", "kwargs"), SHAPES)
def test_a_hook_added_during_an_emission_runs_from_the_next_one(args, kwargs):
    log: list = []
    event = Event("e")
    event.register(lambda *a, **k: event.register(numbered(log, 9)) and "added", once=True)
    event.register(numbered(log, 0))
    assert event.emit(*args, **kwargs) == ["added", 0]
    assert event.emit(*args, **kwargs) == [0, 9]


def test_the_emitter_is_rebuilt_whenever_the_hooks_change():
    event = Event("e")
    empty = event.emit
    handle = event.register(lambda: 1)
    one = event.emit
    assert one is not empty and one() == [1]
    handle.remove()
    assert event.emit is not one and event.emit() == []


def test_a_kept_emitter_skips_a_removed_hook_and_then_follows_the_event():
    # ``event.emit`` kept before a change (a callback, a local in a hot loop) stays right.
    log: list = []
    event = Event("e")
    first = event.register(numbered(log, 0))
    event.register(numbered(log, 1))
    kept = event.emit
    first.remove()
    assert kept("x") == [1]
    event.register(numbered(log, 2))
    assert kept("x") == [1, 2]
    assert [entry[0] for entry in log] == [1, 1, 2]


def test_a_kept_emitter_of_an_event_without_hooks_sees_later_hooks():
    event = Event("e")
    kept = event.emit
    event.register(lambda x: x * 2)
    assert kept(4) == [8]


@pytest.mark.parametrize(("args", "kwargs"), SHAPES)
@pytest.mark.parametrize("failing", [0, 3, 7])
def test_an_error_names_the_hook_that_raised_at_every_position(args, kwargs, failing):
    log: list = []
    event = Event("saved")
    hooks = [numbered(log, index) for index in range(8)]

    def broken(*a, **k):
        raise ValueError("disk full")

    hooks[failing] = broken
    for hook in hooks:
        event.register(hook)
    with pytest.raises(HookError) as info:
        event.emit(*args, **kwargs)
    assert info.value.hook is broken and info.value.point == "saved"
    assert isinstance(info.value.__cause__, ValueError)
    assert [entry[0] for entry in log] == list(range(failing))


def test_a_once_hook_that_raises_is_named_though_it_removed_itself():
    event = Event("e")

    def boom(x):
        raise KeyError(x)

    event.register(lambda x: None)
    handle = event.register(boom, once=True)
    with pytest.raises(HookError) as info:
        event.emit(1)
    assert info.value.hook is boom and handle.removed and event.emit(1) == [None]


def test_coroutine_hooks_are_refused_until_they_are_removed_also_by_a_kept_emitter():
    event = Event("e")

    async def later(x):
        return x

    handle = event.register(later)
    kept = event.emit
    with pytest.raises(ConfigError, match="coroutine hooks"):
        event.emit(1)
    handle.remove()
    event.register(lambda x: x + 1)
    assert kept(1) == [2] and event.emit(1) == [2]


def test_an_event_and_its_emitters_are_freed_without_the_garbage_collector():
    # No emitter holds its Event (a kept one only weakly): no reference cycle through them.
    gc.disable()
    try:
        event = Event("e")
        handles = [event.register(lambda: None), event.register(lambda: None, every=2)]
        kept = event.emit
        assert kept() == [None]
        for handle in handles:
            handle.remove()
        ref = weakref.ref(event)
        del event
        assert ref() is None and kept() == []
    finally:
        gc.enable()
