"""Thread safety of hookline.core: many threads registering, removing and emitting at once.

``sys.setswitchinterval(1e-6)`` makes the interpreter switch threads about
every bytecode-sized slice, so the races the locks guard against happen in a
fraction of a second. Every check is exact: a hook registered (the call
returned) is called exactly once by an emission that starts afterwards in the
same thread, and not at all by one that starts after its removal returned.
"""

from __future__ import annotations

import threading

import pytest

from hookline.core import Event, EventBus, HandleGroup, HookHandle, hookable, observe, observed
from tests.threads import fast_switching  # noqa: F401  (autouse)
from tests.threads import run_threads as shared_run_threads

THREADS = 8
ROUNDS = 150


def run_threads(target, count=THREADS):
    """Run ``target(index)`` in ``count`` threads started together; re-raise the first error."""
    shared_run_threads(target, count)


# -- Event ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("attempt", range(3))
def test_event_register_remove_and_emit_from_many_threads(attempt):
    event = Event("busy")
    # permanent hooks at three priorities: every emission must return them in order
    for label, priority in (("c", "LOW"), ("a", "HIGHEST"), ("b", "NORMAL")):
        event.register(lambda token, label=label: label, priority=priority)

    def worker(index):
        for i in range(ROUNDS):
            token = (index, i)
            seen: list[object] = []
            handle = event.register(lambda t, seen=seen: seen.append(t), priority=(index * 13 + i) % 101)
            results = event.emit(token)
            assert seen.count(token) == 1, "a registered hook must run once per emission"
            permanent = [r for r in results if r is not None]
            assert permanent == ["a", "b", "c"], permanent
            handle.remove()
            if i % 3 == 0:
                handle.remove()  # idempotent, also under contention
            event.emit(("after", index, i))
            assert ("after", index, i) not in seen, "a removed hook must not run"

    run_threads(worker)
    assert len(event) == 3
    assert event.emit(0) == ["a", "b", "c"]


def test_event_clear_while_others_register_loses_nothing_it_did_not_remove():
    event = Event("cleared")
    kept: list[HookHandle] = []
    lock = threading.Lock()

    def worker(index):
        for i in range(ROUNDS):
            if index == 0 and i % 10 == 0:
                event.clear()
            else:
                handle = event.register(lambda: None)
                with lock:
                    kept.append(handle)

    run_threads(worker)
    alive = [h for h in kept if not h.removed]
    assert len(event) == len(alive)
    assert set(map(id, event.hooks)) == {id(h.hook) for h in alive}


def test_once_runs_exactly_once_across_threads():
    event = Event("once")
    calls: list[int] = []
    handles = [event.register(lambda i: calls.append(i), once=True) for _ in range(20)]

    def worker(index):
        for _ in range(20):
            event.emit(index)

    run_threads(worker)
    assert len(calls) == 20 and all(h.removed for h in handles) and len(event) == 0


def test_every_counts_each_emission_once_across_threads():
    event = Event("every")
    calls: list[int] = []
    event.register(lambda: calls.append(1), every=3)

    def worker(_index):
        for _ in range(300):
            event.emit()

    run_threads(worker)
    assert len(calls) == THREADS * 300 // 3


def test_handle_removed_from_many_threads_runs_its_remover_once():
    for _ in range(50):
        removals: list[int] = []
        handle = HookHandle(lambda removals=removals: removals.append(1))
        run_threads(lambda _index, handle=handle: handle.remove(), count=4)
        assert removals == [1] and handle.removed


def test_handle_group_add_and_remove_from_many_threads():
    event = Event("grouped")
    group = HandleGroup()

    def worker(index):
        for i in range(ROUNDS):
            group.add(event.register(lambda: None))
            if index == 0 and i % 25 == 0:
                group.remove()

    run_threads(worker)
    assert len(event) == len(group)
    group.remove()
    assert len(event) == 0


# -- EventBus ------------------------------------------------------------------------------------
def test_bus_creates_each_event_once_under_contention():
    bus = EventBus()

    def worker(index):
        for i in range(ROUNDS):
            name = f"event{i}"
            seen: list[int] = []
            handle = bus.on(name, lambda token, seen=seen: seen.append(token))
            bus.emit(name, index)
            assert seen.count(index) == 1, f"hook on {name} lost"
            handle.remove()

    run_threads(worker)
    assert all(len(bus.event(name)) == 0 for name in bus.names())


# -- @hookable -----------------------------------------------------------------------------------
class Counter:
    def __init__(self):
        self.value = 0

    @hookable
    def add(self, amount):
        return amount


@hookable
def double(x):
    return 2 * x


def test_hookable_function_hooks_from_many_threads():
    def worker(index):
        for i in range(ROUNDS):
            seen: list[int] = []
            kind = ("pre", "post", "around")[i % 3]
            if kind == "pre":
                handle = double.pre(lambda args, kwargs, seen=seen: seen.append(args[0]))
            elif kind == "post":
                handle = double.post(lambda result, args, kwargs, seen=seen: seen.append(args[0]))
            else:
                note = seen.append
                handle = double.around(lambda call, args, kwargs, note=note: note(args[0]) or call(*args))
            token = index * 10_000 + i
            assert double(token) == 2 * token
            assert seen.count(token) == 1, f"{kind} hook lost"
            handle.remove()
            double(-token - 1)
            assert -token - 1 not in seen

    run_threads(worker)
    assert double(3) == 6 and not double._hooked  # noqa: SLF001 - no hook left: the fast path is back


def test_hookable_instance_hooks_from_many_threads():
    shared = Counter()

    def worker(index):
        mine = Counter()
        for i in range(ROUNDS):
            seen: list[int] = []
            target = shared if i % 2 else mine
            handle = target.add.post(lambda result, args, kwargs, seen=seen: seen.append(result))
            token = index * 10_000 + i
            assert target.add(token) == token
            assert seen.count(token) == 1
            handle.remove()

    run_threads(worker)
    assert not Counter.add._hooked  # noqa: SLF001


# -- observed ------------------------------------------------------------------------------------
class Gauge:
    level = observed(default=0)


def test_observe_one_instance_from_many_threads():
    gauge = Gauge()

    def worker(index):
        for i in range(ROUNDS):
            seen: list[int] = []
            handle = observe(gauge, "level", lambda obj, name, old, new, seen=seen: seen.append(new))
            token = index * 10_000 + i
            gauge.level = token
            assert seen.count(token) == 1
            handle.remove()

    run_threads(worker)
