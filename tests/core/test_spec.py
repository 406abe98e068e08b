"""Argument specs (pluggy's hookspecs): each hook gets the arguments it names, and a name the
event does not pass is a ConfigError at registration."""

from __future__ import annotations

import asyncio
import inspect

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
        process.register(lambda data: data, when=lambda step: True)
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


# -- hooks of every shape get what they ask for; emissions that do not fit are refused --------
def _process(hook):
    event = Event("process", args=("data", "config"))
    event.register(hook)
    return event


@pytest.mark.parametrize("hook, expected", [
    (lambda **kw: sorted(kw.items()), [("config", "c"), ("data", 3)]),
    (lambda data, **kw: (data, sorted(kw)), (3, ["config"])),
    (lambda config, /: config, "c"),
    (lambda data, config, /: (data, config), (3, "c")),
    (lambda data, extra=1, config=None: (data, extra, config), (3, 1, "c")),
    (lambda data, *args, config: (data, args, config), (3, (), "c")),
], ids=["**kwargs", "data, **kwargs", "positional-only", "two positional-only",
        "a default between", "*args beside names"])
@pytest.mark.parametrize("emit", [lambda ev: ev.emit(3, "c"), lambda ev: ev.emit(data=3, config="c"),
                                  lambda ev: ev.emit(3, config="c"), lambda ev: ev.emit_first(3, "c"),
                                  lambda ev: [asyncio.run(ev.emit_async(config="c", data=3))][0]],
                         ids=["positional", "keywords", "mixed", "emit_first", "emit_async"])
def test_every_hook_shape_gets_the_arguments_it_asks_for(hook, expected, emit):
    result = emit(_process(hook))
    assert result == expected or result == [expected]


def test_a_hook_taking_only_star_args_is_refused_at_registration():
    with pytest.raises(ConfigError, match=r"takes only \*args, but the event passes its arguments "
                                          r"by name \(data, config\).*take \*\*kwargs"):
        _process(lambda *args: args)
    assert _process(lambda *args, **kwargs: kwargs).emit(1, 2) == [{"data": 1, "config": 2}]


def test_a_positional_only_name_the_spec_lacks_is_refused():
    with pytest.raises(ConfigError, match="names 'date'"):
        _process(lambda date, /: None)


@pytest.mark.parametrize("hook", [lambda data: data, lambda data, config=None: data, lambda **kw: 0],
                         ids=["subset", "as is", "**kwargs"])
@pytest.mark.parametrize("form", ["emit", "emit_first", "emit_async"])
def test_emissions_that_do_not_fit_the_spec_are_one_config_error(hook, form):
    event = _process(hook)

    def emit(*args, **kwargs):
        if form == "emit_async":
            return asyncio.run(event.emit_async(*args, **kwargs))
        return getattr(event, form)(*args, **kwargs)

    with pytest.raises(ConfigError, match=r"keyword 'confg'.*did you mean 'config'\?"):
        emit(data=3, confg=1)
    with pytest.raises(ConfigError, match=r"takes 2 argument\(s\) \(data, config\), got 3"):
        emit(1, 2, 3)
    with pytest.raises(ConfigError, match="got 'data' twice"):
        emit(1, data=2)
    emit(data=3)  # a missing argument is not the emission's mistake: hooks may not need it


def test_an_event_without_hooks_checks_its_emissions_too():
    event = Event("process", args=("data",))
    with pytest.raises(ConfigError, match="keyword 'dta'"):
        event.emit(dta=1)
    bus = EventBus({"process": ("data",)})
    with pytest.raises(ConfigError, match="keyword 'dta'"):
        bus.emit("process", dta=1)


def test_stacked_register_decorators_register_the_function_on_both_events():
    first = Event("first", args=("data", "config"))
    second = Event("second", args=("data", "config"))

    @first.register
    @second.register
    def both(data):
        return data

    assert first.emit(data=1, config=2) == [1] and second.emit(3, 4) == [3]
    assert first.hooks[0] is second.hooks[0] is both.hook
    assert both.__wrapped__ is both.hook and str(inspect.signature(both)) == "(data)"
