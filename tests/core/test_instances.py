import copy
import gc

import pytest

from hookline.core import ConfigError
from hookline.core._instances import InstanceTable


class Thing:
    pass


def test_values_are_built_on_first_use_and_kept():
    table = InstanceTable(lambda obj: [])
    thing = Thing()
    assert table.get(thing) is None and not table
    value = table.setdefault(thing)
    assert table.setdefault(thing) is value and table.get(thing) is value
    assert table


def test_each_object_has_its_own_value_even_when_equal():
    table = InstanceTable(lambda obj: [])
    first, second = Thing(), Thing()
    assert table.setdefault(first) is not table.setdefault(second)
    assert table.get(copy.deepcopy(first)) is None


def test_entries_vanish_with_their_object_and_report_it():
    dropped = []
    table = InstanceTable(lambda obj: "value", on_drop=dropped.append)
    thing = Thing()
    table.setdefault(thing)
    del thing
    gc.collect()
    assert not table
    assert dropped == ["value"]


def test_objects_without_weak_references_are_a_config_error():
    table = InstanceTable(lambda obj: [])
    with pytest.raises(ConfigError, match="__weakref__"):
        table.setdefault(object())
