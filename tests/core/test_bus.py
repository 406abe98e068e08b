import asyncio

import pytest

from hookline.core import ConfigError, Event, EventBus, HookError, HookHandle


def test_events_are_created_on_demand():
    bus = EventBus()
    handle = bus.on("saved", lambda path: f"saved {path}")
    assert isinstance(handle, HookHandle)
    assert bus.emit("saved", "a.pth") == ["saved a.pth"]
    assert "saved" in bus and bus.names() == ["saved"]


def test_event_returns_the_same_event_object():
    bus = EventBus()
    event = bus.event("tick")
    assert isinstance(event, Event) and event.name == "tick"
    assert bus.event("tick") is event
    bus.on("tick", abs)
    assert event.hooks == (abs,)


def test_emitting_an_event_nobody_registered_on_returns_nothing():
    bus = EventBus()
    assert bus.emit("nobody") == []
    assert bus.emit_first("nobody") is None
    assert asyncio.run(bus.emit_async("nobody")) == []


def test_emit_passes_arguments_including_a_keyword_called_name():
    bus = EventBus()
    bus.on("greet", lambda *, name: f"hello {name}")
    assert bus.emit("greet", name="ada") == ["hello ada"]


def test_on_is_a_decorator_when_fn_is_omitted():
    bus = EventBus()

    @bus.on("start")
    def announce(job):
        return f"{job} started"

    assert isinstance(announce, HookHandle)
    assert announce("x") == "x started"
    assert bus.emit("start", "backup") == ["backup started"]
    announce.remove()
    assert bus.emit("start", "backup") == []


def test_on_passes_options_to_register():
    log = []
    bus = EventBus()
    bus.on("tick", lambda: log.append("late"))

    @bus.on("tick", priority="HIGH", every=2)
    def early():
        log.append("early")

    bus.on("tick", lambda: log.append("once"), once=True)
    bus.emit("tick")
    bus.emit("tick")
    assert log == ["late", "once", "early", "late"]


def test_emit_first_and_emit_async_take_the_name_first():
    bus = EventBus()
    bus.on("lookup", lambda key: None, priority="HIGH")
    bus.on("lookup", lambda key: key * 2)

    async def fetch(key):
        await asyncio.sleep(0)
        return key + "!"

    bus.on("fetch", fetch)
    assert bus.emit_first("lookup", "ab") == "abab"
    assert asyncio.run(bus.emit_async("fetch", "ab")) == ["ab!"]


def test_hook_errors_name_the_event():
    bus = EventBus()
    bus.on("saved", lambda: 1 / 0)
    with pytest.raises(HookError) as info:
        bus.emit("saved")
    assert info.value.point == "saved"
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_a_strict_bus_knows_its_events_up_front():
    bus = EventBus(["start", "stop"])
    assert bus.names() == ["start", "stop"]
    assert bus.emit("start") == []
    bus.on("stop", lambda: "stopped")
    assert bus.emit("stop") == ["stopped"]


@pytest.mark.parametrize(
    "use",
    [
        lambda bus: bus.on("strat", print),
        lambda bus: bus.on("strat")(print),
        lambda bus: bus.emit("strat"),
        lambda bus: bus.emit_first("strat"),
        lambda bus: asyncio.run(bus.emit_async("strat")),
        lambda bus: bus.event("strat"),
    ],
    ids=["on", "on-decorator", "emit", "emit_first", "emit_async", "event"],
)
def test_a_strict_bus_rejects_unknown_names_suggesting_the_closest(use):
    bus = EventBus(["start", "stop"])
    with pytest.raises(ConfigError) as info:
        use(bus)
    assert "unknown event 'strat'" in str(info.value)
    assert "did you mean 'start'" in str(info.value)
    assert "strat" not in bus


def test_an_empty_strict_bus_accepts_no_name():
    with pytest.raises(ConfigError):
        EventBus([]).on("anything", print)


def test_strict_event_names_must_be_strings():
    with pytest.raises(ConfigError):
        EventBus(["start", 3])


def test_repr_tells_strictness():
    assert repr(EventBus(["a"])) == "<strict EventBus ['a']>"
    assert repr(EventBus()) == "<EventBus []>"
