"""positive_int: the one check behind every count-like argument (intervals, lengths, ...)."""

from __future__ import annotations

import pytest

from hookline import ConfigError
from hookline.engine.checks import positive_int


@pytest.mark.parametrize("value", [1, 2, 10**9])
def test_positive_ints_come_back_unchanged(value):
    assert positive_int(value, "interval") == value


@pytest.mark.parametrize("value", [0, -1, 1.0, 2.5, "3", True, False, None, [1]])
def test_anything_else_is_a_config_error_naming_the_argument_and_value(value):
    with pytest.raises(ConfigError) as info:
        positive_int(value, "interval")
    assert str(info.value) == f"interval must be an int >= 1, got {value!r}"


def test_the_owner_is_named_first():
    with pytest.raises(ConfigError, match=r"^CheckpointHook interval must be an int >= 1, got 0$"):
        positive_int(0, "interval", owner="CheckpointHook")


def test_none_passes_only_when_allowed():
    assert positive_int(None, "max_iters", allow_none=True) is None
    with pytest.raises(ConfigError, match="max_iters must be an int >= 1, got None"):
        positive_int(None, "max_iters")
    with pytest.raises(ConfigError, match="max_iters must be an int >= 1, got 0"):
        positive_int(0, "max_iters", allow_none=True)


def test_a_config_error_is_a_value_error():
    with pytest.raises(ValueError, match="val_interval"):
        positive_int(-3, "val_interval")
