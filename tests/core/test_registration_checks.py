"""Bad input at registration is one ConfigError naming what is wrong and what is accepted: an
explicit None hook, a name that is not a str, a hook of the wrong shape, Registry arguments;
and a failing when= predicate is reported as the predicate's failure."""

from __future__ import annotations

import pickle

import pytest

from hookline.core import ConfigError, Event, EventBus, HookError, Registry, hookable, observe, observed


@hookable
def save(path):
    return path


class Sensor:
    celsius = observed(default=0)


# -- an explicit None, and names that are not str ---------------------------------------------------
@pytest.mark.parametrize("register", [
    lambda: Event("ev").register(None),
    lambda: Event("ev").register(None, priority="HIGH"),
    lambda: EventBus().on("x", None),
    lambda: save.post(None),
    lambda: save.pre(None),
    lambda: observe(Sensor(), "celsius", None),
], ids=["register", "register with options", "bus.on", "post", "pre", "observe"])
def test_an_explicit_none_hook_is_a_config_error_not_a_decorator(register):
    with pytest.raises(ConfigError, match="a hook must be callable, got None"):
        register()


def test_the_decorator_forms_still_work():
    ev, bus = Event("ev"), EventBus()
    assert ev.register(priority="HIGH")(len).hook is len
    assert bus.on("x")(len).hook is len and bus.emit("x", "ab") == [2]
    with save.post()(lambda result, args, kwargs: "post") as handle:
        assert save("p") == "post" and not handle.removed


def test_event_and_bus_names_must_be_str():
    with pytest.raises(ConfigError, match="an event name must be a str, got 42"):
        Event(42)
    bus = EventBus()
    with pytest.raises(ConfigError, match=r"bus.on takes the event name first, as in "
                                          r"bus.on\('saved', fn\).*got <built-in function print>"):
        bus.on(print)
    assert bus.names() == []


# -- hooks of the wrong shape ------------------------------------------------------------------------
@pytest.mark.parametrize("register, expected", [
    (lambda: save.pre(lambda args: None),
     r"save.pre hook .* takes \(args\) and cannot be called as hook\(args, kwargs\)"),
    (lambda: save.post(lambda result: None), r"hook\(result, args, kwargs\)"),
    (lambda: save.around(lambda call, args: None), r"hook\(call, args, kwargs\)"),
    (lambda: save.on_error(lambda exc, args, kwargs, extra: None), r"hook\(exc, args, kwargs\)"),
    (lambda: save.post(print, when=lambda result: True),
     r"when-predicate of save.post .* cannot be called as when\(result, args, kwargs\)"),
    (lambda: observe(Sensor(), "celsius", lambda new: None),
     r"observer of Sensor.celsius \(on='set'\) .* cannot be called as fn\(obj, name, old, new\)"),
    (lambda: observe(Sensor, "celsius", lambda obj, name, old, new: 0, on="get"),
     r"fn\(obj, name, value\)"),
    (lambda: observe(Sensor, "celsius", print, when=lambda obj: True, on="delete"),
     r"when\(obj, name, old\)"),
], ids=["pre", "post", "around", "on_error", "when", "observe set", "observe get", "observe when"])
def test_hooks_that_cannot_take_the_arguments_are_refused_at_registration(register, expected):
    with pytest.raises(ConfigError, match=expected):
        register()
    assert save("p") == "p"


def test_hooks_of_the_right_shape_and_without_a_signature_are_accepted():
    handles = [save.pre(lambda *args: None), save.post(lambda result, args, kwargs=None: None),
               save.post(print), save.on_error(lambda exc, *rest: None),
               observe(Sensor, "celsius", lambda obj, name, *values: None)]
    for handle in handles:
        handle.remove()


# -- a failing when= predicate ------------------------------------------------------------------------
def test_a_failing_predicate_is_reported_as_the_predicates_failure():
    def upload(path):
        return path

    def is_checkpoint(path):
        return path.endswith(".pth")

    saved = Event("saved")
    saved.register(upload, when=is_checkpoint)
    with pytest.raises(HookError, match=r"when-predicate .*is_checkpoint of hook .*upload failed "
                                        r"at saved: AttributeError") as info:
        saved.emit(None)
    assert info.value.hook is is_checkpoint and info.value.filtering is upload
    assert isinstance(info.value.__cause__, AttributeError)
    back = pickle.loads(pickle.dumps(HookError(len, "saved", ValueError("x"), filtering=abs)))
    assert (back.hook, back.filtering, str(back)) == (len, abs, str(
        HookError(len, "saved", ValueError("x"), filtering=abs)))

    @hookable
    def store(path):
        return path

    def audit(result, args, kwargs):
        return None

    store.post(audit, when=lambda result, args, kwargs: result.startswith("/"))
    with pytest.raises(HookError, match=r"when-predicate .*<lambda> of hook .*audit failed at "
                                        r".*store.post"):
        store(None)


def test_a_predicate_of_an_event_with_a_spec_is_named_too():
    process = Event("process", args=("data", "config"))

    def small(data):
        return data < 10

    process.register(lambda config: config, when=small)
    with pytest.raises(HookError, match="when-predicate .*small of hook") as info:
        process.emit(data=None, config=1)
    assert info.value.hook is small


# -- Registry.register --------------------------------------------------------------------------------
def test_registry_register_refuses_values_bad_names_and_a_non_bool_force():
    things = Registry("thing")
    with pytest.raises(ConfigError, match=r"not a str value: got 'Alias'; to register under a "
                                          r"name, write @THING.register\(name='Alias'\)"):
        things.register("Alias")
    with pytest.raises(ConfigError, match="takes classes, functions and other objects .* got 42"):
        things.register(42, name="x")
    with pytest.raises(ConfigError, match=r"name must be None, a str or a list of str, got 3"):
        things.register(len, name=3)
    with pytest.raises(ConfigError, match="non-empty str, got ''"):
        things.register(len, name="")
    with pytest.raises(ConfigError, match="force must be True or False, got 'yes'"):
        things.register(len, force="yes")
    with pytest.raises(ConfigError, match="force must be True or False"):
        things.register(force=1)
    assert things.names() == []


def test_registry_register_takes_a_list_of_names():
    things = Registry("thing")
    things.register(len, name=["size", "length"])
    assert things.get("size") is things.get("length") is len
    with pytest.raises(ConfigError, match="'size' is already registered"):
        things.register(abs, name=["magnitude", "size"])
    assert "magnitude" not in things  # all or nothing
    adapter = object()  # objects other than plain values may be registered (adapters, tables)
    assert things.register(adapter, name="adapter") is adapter


def test_a_hook_error_from_inside_a_predicate_passes_through_unchanged():
    inner = Event("inner")

    def failing(x):
        raise ValueError(x)

    inner.register(failing)
    outer = Event("outer")
    outer.register(print, when=lambda x: inner.emit(x))
    with pytest.raises(HookError, match="failing failed at inner") as info:
        outer.emit(1)
    assert info.value.hook is failing and info.value.filtering is None


def test_register_as_a_decorator_on_a_method_in_a_class_body_is_refused():
    """It would hook the plain function, called without ``self``; the bound method is what works."""
    bus = EventBus()
    with pytest.raises(ConfigError, match=r"Plugin.on_start in its class body.*plugin.on_start"):
        class Plugin:
            @bus.on("start")
            def on_start(self, job):
                return job

    class Plugin2:
        def on_start(self, job):
            return job
    bus.on("start", Plugin2().on_start)
    assert bus.emit("start", "x") == ["x"]
