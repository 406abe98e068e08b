import copy
import gc
import pickle
import weakref

import pytest

from hookline.core import ConfigError, HookError, HookHandle, observe, observed


class Sensor:
    """A temperature sensor; module level so that instances pickle."""

    celsius = observed(default=20.0)
    label = observed()
    unit = "C"

    def __init__(self, label="kitchen"):
        self.label = label

    def read(self):
        return self.celsius


def changes():
    log = []

    def hook(obj, name, old, new):
        log.append((name, old, new))

    return log, hook


def test_observe_calls_fn_with_obj_name_old_and_new_after_each_assignment():
    sensor = Sensor()
    log, hook = changes()
    handle = observe(sensor, "celsius", hook)
    assert isinstance(handle, HookHandle)
    sensor.celsius = 25.0
    sensor.celsius = 31.0
    assert log == [("celsius", 20.0, 25.0), ("celsius", 25.0, 31.0)]


def test_the_hook_receives_the_object_and_the_value_is_already_set():
    sensor = Sensor()
    seen = []
    observe(sensor, "celsius", lambda obj, name, old, new: seen.append((obj, obj.celsius)))
    sensor.celsius = 5
    assert seen == [(sensor, 5)]


def test_assigning_the_same_value_still_notifies():
    sensor = Sensor()
    log, hook = changes()
    observe(sensor, "celsius", hook)
    sensor.celsius = 20.0
    assert log == [("celsius", 20.0, 20.0)]


def test_observed_attribute_reads_like_a_plain_attribute():
    sensor = Sensor()
    assert sensor.celsius == 20.0  # the default
    sensor.celsius = 7
    assert sensor.celsius == 7 and vars(sensor)["celsius"] == 7
    assert isinstance(Sensor.celsius, observed)


def test_without_a_default_reading_before_assignment_is_an_attribute_error():
    class Box:
        content = observed()

    box = Box()
    with pytest.raises(AttributeError, match="content"):
        box.content  # noqa: B018
    log, hook = changes()
    observe(box, "content", hook)
    box.content = "book"
    assert log == [("content", None, "book")]


def test_observing_an_instance_leaves_the_others_alone():
    kitchen, garage = Sensor(), Sensor("garage")
    log, hook = changes()
    observe(kitchen, "celsius", hook)
    garage.celsius = 1
    assert log == []


def test_observing_the_class_watches_every_instance():
    log, hook = changes()
    with observe(Sensor, "celsius", hook):
        Sensor().celsius = 1
        Sensor("garage").celsius = 2
    Sensor().celsius = 3
    assert log == [("celsius", 20.0, 1), ("celsius", 20.0, 2)]


def test_class_observers_run_before_instance_observers():
    sensor = Sensor()
    order = []
    observe(sensor, "celsius", lambda *_: order.append("instance"), priority="HIGHEST")
    with observe(Sensor, "celsius", lambda *_: order.append("class"), priority="LOWEST"):
        sensor.celsius = 1
    assert order == ["class", "instance"]


def test_observing_a_subclass_watches_only_its_instances():
    class Outdoor(Sensor):
        pass

    log, hook = changes()
    observe(Outdoor, "celsius", hook, every=2)
    for value in range(3):
        Sensor().celsius = value  # not counted by `every`
    outdoor = Outdoor()
    outdoor.celsius = 1
    Sensor().celsius = 99
    outdoor.celsius = 2
    assert log == [("celsius", 1, 2)]


def test_options_once_every_when_and_priority():
    sensor = Sensor()
    order = []
    once = observe(sensor, "celsius", lambda *_: order.append("once"), once=True)
    observe(sensor, "celsius", lambda *_: order.append("every 2"), every=2)
    observe(sensor, "celsius", lambda obj, name, old, new: order.append(f"hot {new}"),
            when=lambda obj, name, old, new: new > 30, priority="HIGH")
    for value in (25, 35, 10, 40):
        sensor.celsius = value
    assert order == ["once", "hot 35", "every 2", "hot 40", "every 2"]
    assert once.removed


def test_removing_the_handle_stops_notifications():
    sensor = Sensor()
    log, hook = changes()
    handle = observe(sensor, "celsius", hook)
    handle.remove()
    sensor.celsius = 1
    assert log == []


def test_each_attribute_is_observed_separately():
    sensor = Sensor()
    log, hook = changes()
    observe(sensor, "label", hook)
    sensor.celsius = 1
    sensor.label = "attic"
    assert log == [("label", "kitchen", "attic")]


@pytest.mark.parametrize("name", ["unit", "read", "missing", "__init__"])
def test_observing_an_attribute_that_is_not_observed_is_a_config_error(name):
    with pytest.raises(ConfigError) as info:
        observe(Sensor(), name, print)
    message = str(info.value)
    assert f"Sensor.{name} is not an observed attribute" in message
    assert "celsius, label" in message  # what can be observed


def test_observing_the_class_checks_the_attribute_too():
    with pytest.raises(ConfigError):
        observe(Sensor, "unit", print)


def test_a_failing_observer_is_a_hook_error_after_the_assignment():
    sensor = Sensor()

    def alarm(obj, name, old, new):
        raise RuntimeError("too hot")

    observe(sensor, "celsius", alarm)
    with pytest.raises(HookError) as info:
        sensor.celsius = 90
    assert info.value.hook is alarm
    assert info.value.point == "Sensor.celsius"
    assert isinstance(info.value.__cause__, RuntimeError)
    assert sensor.celsius == 90


def test_observers_do_not_leak_to_copies():
    sensor = Sensor()
    log, hook = changes()
    observe(sensor, "celsius", hook)
    clone = copy.deepcopy(sensor)
    restored = pickle.loads(pickle.dumps(sensor))
    assert vars(clone) == vars(restored) == vars(sensor) == {"label": "kitchen"}
    clone.celsius = 1
    restored.celsius = 2
    assert log == []


def test_observers_do_not_keep_the_object_alive():
    sensor = Sensor()
    ref = weakref.ref(sensor)
    observe(sensor, "celsius", print)
    del sensor
    gc.collect()
    assert ref() is None


def test_temperature_sensor_notifies_its_observers():
    class Thermometer:
        celsius = observed(default=20.0)

    alerts = []
    kitchen = Thermometer()
    observe(kitchen, "celsius", lambda s, name, old, new: alerts.append(f"{old} -> {new}"),
            when=lambda s, name, old, new: new > 30)
    for reading in (22.5, 31.0, 29.0, 35.5):
        kitchen.celsius = reading
    assert alerts == ["22.5 -> 31.0", "29.0 -> 35.5"]


def test_observed_attributes_attached_later_keep_their_own_values():
    class Late:
        pass

    Late.a = observed(0)  # no __set_name__: each keeps its values under a key of its own
    Late.b = observed(0)
    obj = Late()
    obj.a = 1
    assert (obj.a, obj.b) == (1, 0)
    del obj.a
    assert obj.a == 0


def test_a_class_whose_slots_leave_out_dict_is_one_clear_error():
    class Slotted:
        __slots__ = ("__weakref__",)
        level = observed(0)

    with pytest.raises(ConfigError, match=r"Slotted.level is observed.*add '__dict__' to __slots__"):
        Slotted().level = 1
