"""observe(..., on="get") and on="delete": reads and deletions of observed attributes."""

from __future__ import annotations

import gc

import pytest

from hookline.core import ConfigError, HookError, observe, observed


class Sensor:
    celsius = observed(default=20.0)
    label = observed()


class Outdoor(Sensor):
    pass


def test_get_observers_see_every_read_and_the_value_read():
    sensor = Sensor()
    reads = []
    handle = observe(sensor, "celsius", lambda obj, name, value: reads.append((obj, name, value)), on="get")
    assert sensor.celsius == 20.0          # the default counts as a read
    sensor.celsius = 25.0
    assert sensor.celsius == 25.0
    assert reads == [(sensor, "celsius", 20.0), (sensor, "celsius", 25.0)]
    handle.remove()
    assert sensor.celsius == 25.0 and len(reads) == 2


def test_a_get_observer_return_value_does_not_change_what_is_read():
    sensor = Sensor()
    observe(sensor, "celsius", lambda obj, name, value: value * 100, on="get")
    assert sensor.celsius == 20.0


def test_reading_the_attribute_inside_its_get_observer_does_not_recurse():
    sensor = Sensor()
    seen = []
    observe(sensor, "celsius", lambda obj, name, value: seen.append(obj.celsius + value), on="get")
    assert sensor.celsius == 20.0 and seen == [40.0]


def test_a_failed_read_notifies_nobody():
    sensor = Sensor.__new__(Sensor)
    reads = []
    observe(sensor, "label", lambda *args: reads.append(args), on="get")
    with pytest.raises(AttributeError, match="no value for 'label'"):
        _ = sensor.label
    assert reads == []


def test_delete_observers_see_the_deleted_value_and_the_default_comes_back():
    sensor = Sensor()
    sensor.celsius = 30.0
    deleted = []
    observe(sensor, "celsius", lambda obj, name, old: deleted.append((name, old)), on="delete")
    del sensor.celsius
    assert deleted == [("celsius", 30.0)] and sensor.celsius == 20.0
    with pytest.raises(AttributeError, match="no value for 'celsius' to delete"):
        del sensor.celsius
    assert deleted == [("celsius", 30.0)]


def test_set_get_and_delete_observers_are_independent_and_take_the_filters():
    sensor = Sensor()
    log = []
    observe(sensor, "celsius", lambda obj, name, old, new: log.append(("set", new)))
    observe(sensor, "celsius", lambda obj, name, value: log.append(("get", value)), on="get", every=2)
    observe(sensor, "celsius", lambda obj, name, old: log.append(("del", old)), on="delete", once=True)
    sensor.celsius = 1
    _ = sensor.celsius
    _ = sensor.celsius
    del sensor.celsius
    sensor.celsius = 2
    del sensor.celsius
    assert log == [("set", 1), ("get", 1), ("del", 1), ("set", 2)]


def test_class_observers_of_reads_gate_subclasses():
    base, outdoor = Sensor(), Outdoor()
    everyone, outdoors = [], []

    def recorder(log):
        return lambda obj, name, value: log.append(type(obj).__name__)

    first = observe(Sensor, "celsius", recorder(everyone), on="get")
    second = observe(Outdoor, "celsius", recorder(outdoors), on="get")
    _ = base.celsius
    _ = outdoor.celsius
    first.remove()
    second.remove()
    assert everyone == ["Sensor", "Outdoor"] and outdoors == ["Outdoor"]


def test_an_observer_that_raises_is_a_hook_error_naming_the_access():
    sensor = Sensor()

    def broken(obj, name, value):
        raise ValueError("no reads")

    observe(sensor, "celsius", broken, on="get")
    with pytest.raises(HookError) as info:
        _ = sensor.celsius
    assert info.value.point == "Sensor.celsius.get" and isinstance(info.value.__cause__, ValueError)


def test_an_unknown_on_is_a_config_error():
    with pytest.raises(ConfigError, match=r"'gett'; did you mean 'get'.*\(accepted: delete, get, set\)"):
        observe(Sensor(), "celsius", print, on="gett")


def test_reads_cost_nothing_more_once_the_read_observers_are_gone():
    gc.collect()  # sensors of earlier tests, kept alive by their tracebacks' cycles, are gone
    descriptor = Sensor.__dict__["celsius"]
    sensor = Sensor()
    handle = observe(sensor, "celsius", lambda *args: None, on="get")
    other = Sensor()
    observe(other, "celsius", lambda *args: None, on="get")
    assert descriptor.reads == 2
    handle.remove()
    del other
    gc.collect()
    assert descriptor.reads == 0
