"""Hooks that are not plain functions: an ``@hookable async def``, a handle standing for a
decorated hook, a ``functools.partial``, an object with an async ``__call__``; a bound hookable
method as bound methods behave; ``Event`` subclasses; ``EventBus`` names; ``HandleGroup``."""

from __future__ import annotations

import functools
import weakref

import pytest

from hookline.core import ConfigError, Event, EventBus, HandleGroup, HookError, hookable


async def store(path):
    return path


class AsyncCallable:
    async def __call__(self, path):
        return path


@pytest.mark.parametrize("make", [
    lambda: hookable(store),
    lambda: functools.partial(store),
    lambda: AsyncCallable(),
    lambda: Event("other").register(store),  # the handle a decorator form leaves behind
], ids=["hookable", "partial", "async __call__", "handle"])
def test_coroutine_hooks_however_wrapped_are_refused_by_emit_and_by_sync_functions(make):
    saved = Event("saved")
    saved.register(make())
    with pytest.raises(ConfigError, match="has coroutine hooks; use 'await emit_async"):
        saved.emit("m.pth")

    @hookable
    def divide(a, b):
        return a / b

    with pytest.raises(ConfigError, match="is a coroutine function; it can only hook an async"):
        divide.post(make())


def test_errors_name_what_a_handle_or_a_partial_stands_for():
    exported = Event("exported")

    def upload(path):
        raise OSError("disk full")

    handle = Event("saved").register(upload)
    exported.register(handle)
    with pytest.raises(HookError, match=r"hook .*test_errors_name_what.*upload failed at exported"):
        exported.emit("m.pth")
    other = Event("other")
    other.register(functools.partial(upload))
    with pytest.raises(HookError, match=r"hook .*upload failed at other"):
        other.emit("m.pth")
    assert repr(hookable(functools.partial(divmod, 7))) == "<hookable divmod>"  # no AttributeError


class Job:
    @hookable
    def run(self, x):
        return x + 1


def test_a_bound_hookable_method_compares_and_weak_refs_like_a_bound_method():
    job = Job()
    assert job.run == job.run and hash(job.run) == hash(job.run) and job.run != Job().run
    callbacks = [job.run]
    callbacks.remove(job.run)
    ref = weakref.WeakMethod(job.run)
    assert ref() == job.run and ref()(1) == 2
    del job
    assert ref() is None


def test_an_event_subclass_keeps_its_own_emit_with_the_generated_one_as_super():
    calls = []

    class LoggedEvent(Event):
        def emit(self, *args, **kwargs):
            calls.append(args)
            return super().emit(*args, **kwargs)

    saved = LoggedEvent("saved")
    saved.register(lambda path: f"saved {path}")
    assert saved.emit("m.pth") == ["saved m.pth"] and calls == [("m.pth",)]
    saved.register(lambda path: path.upper())  # the emitter is rebuilt: still behind emit()
    assert saved.emit("a") == ["saved a", "A"] and calls[-1] == ("a",)


def test_an_event_bus_given_one_name_as_a_string_is_refused():
    with pytest.raises(ConfigError, match=r"EventBus takes a list of event names, got the string "
                                          r"'start'; write EventBus\(\['start'\]\)"):
        EventBus("start")


def test_a_handle_group_removes_every_handle_even_when_one_raises():
    event = Event("e")
    group = HandleGroup()
    group.add(event.register(lambda: "older"))

    class Broken:
        def remove(self):
            raise RuntimeError("cannot remove")

    group.add(Broken())
    with pytest.raises(RuntimeError, match="cannot remove"):
        group.remove()
    assert len(event) == 0 and len(group) == 0
