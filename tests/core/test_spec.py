"""Argument specs (pluggy's hookspecs): each hook gets the arguments it names, and a name the
event does not pass is a ConfigError at registration."""

from __future__ import annotations

import pytest

from hookline.core import ConfigError, Event, EventBus, HookError


def test_hooks_get_the_arguments_they_name_in_any_order():
    process = Event("process", args=("data", "config"))
    process.register(lambda data: data * 2)
    process.register(lambda config, data: config["x"] + data)
    process.register(lambda: "nothing")
    assert process.emit(data=3, config={"x": 10}) == [6, 13, "nothing"]
    # positional emissions are matched to the spec's names in order
    assert process.emit(4, {"x": 1}) == [8, 5, "nothing"]


def test_a_hook_naming_every_argument_in_order_is_called_as_it_is():
    def full(data, config):
        return data

    def anything(**kwargs):
        return sorted(kwargs)

    process = Event("process", args=("data", "config"))
    process.register(full)
    process.register(anything)
    assert process.emit(data=1, config=None) == [1, ["config", "data"]]
    assert process.hooks == (full, anything)


def test_a_name_the_event_does_not_pass_is_refused_at_registration():
    process = Event("process", args=("data", "config"))
    with pytest.raises(ConfigError, match=r"names 'confg', which the event does not pass; "
                                          r"did you mean 'config'\? \(its arguments: data, config\)"):
        process.register(lambda data, confg: None)
    process.register(lambda data, verbose=False: data)  # a default: left alone, as pluggy does
    with pytest.raises(ConfigError, match="when .* names 'step'"):
        process.register(print, when=lambda step: True)
    assert len(process) == 1


def test_when_and_errors_name_the_users_functions():
    process = Event("process", args=("data", "config"))

    def broken(config):
        raise KeyError(config)

    process.register(lambda data: data, when=lambda data: data > 1)
    assert process.emit(data=1, config="c") == []
    assert process.emit(data=2, config="c") == [2]
    process.register(broken)
    with pytest.raises(HookError, match="broken failed at process: KeyError"):
        process.emit(data=2, config="c")


def test_an_event_bus_takes_specs_per_name():
    bus = EventBus({"process": ("data", "config"), "lookup": ("key",), "free": None})
    bus.on("process", lambda config: config)
    bus.on("free", lambda *args, **kwargs: (args, kwargs))
    assert bus.emit("process", data=1, config="c") == ["c"]
    assert bus.emit("free", 1, x=2) == [((1,), {"x": 2})]
    with pytest.raises(ConfigError, match="names 'name'"):
        bus.on("lookup", lambda name: None)
    assert bus.names() == ["process", "lookup", "free"]


@pytest.mark.parametrize("args", ["data", [1], ["a", "a"], ["not a name"]])
def test_bad_specs_are_config_errors(args):
    with pytest.raises(ConfigError, match="args of event 'e'"):
        Event("e", args=args)
