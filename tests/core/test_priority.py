import pytest

from hookline.core import ConfigError, Priority

NAMES = {
    "HIGHEST": 0, "VERY_HIGH": 10, "HIGH": 30, "ABOVE_NORMAL": 40, "NORMAL": 50,
    "BELOW_NORMAL": 60, "LOW": 70, "VERY_LOW": 90, "LOWEST": 100,
}


def test_members_have_mmengine_names_and_values():
    assert {member.name: member.value for member in Priority} == NAMES


def test_priorities_are_ints_ordered_by_value():
    assert isinstance(Priority.HIGH, int)
    assert Priority.HIGHEST < Priority.NORMAL < Priority.LOWEST
    assert Priority.NORMAL == 50


def test_get_returns_a_member_unchanged():
    assert Priority.get(Priority.LOW) is Priority.LOW


@pytest.mark.parametrize("name", ["high", "HIGH", "High", "hIgH"])
def test_get_accepts_a_name_in_any_case(name):
    assert Priority.get(name) is Priority.HIGH


def test_get_accepts_underscored_names():
    assert Priority.get("very_low") is Priority.VERY_LOW
    assert Priority.get("ABOVE_NORMAL") is Priority.ABOVE_NORMAL


def test_get_turns_named_ints_into_members():
    assert Priority.get(30) is Priority.HIGH


@pytest.mark.parametrize("value", [0, 1, 45, 99, 100])
def test_get_accepts_ints_from_0_to_100(value):
    assert Priority.get(value) == value


@pytest.mark.parametrize("value", [-1, 101, 1000, 2.5, 50.0, None, True, "urgent", "", [50]])
def test_anything_else_is_a_config_error_listing_the_names(value):
    with pytest.raises(ConfigError) as info:
        Priority.get(value)
    message = str(info.value)
    assert repr(value) in message
    for name in NAMES:
        assert name in message
