"""The shared argument checks: positive_int behind every count-like argument (intervals, lengths,
...), and non_negative_int, finite_float, boolean and one_of."""

from __future__ import annotations

import pytest

from hookline import ConfigError
from hookline.engine.checks import boolean, finite_float, non_negative_int, one_of, positive_int


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


# -- the other shared checks ------------------------------------------------------------------------
@pytest.mark.parametrize("value", [-1, 1.0, "0", True, None])
def test_non_negative_int_refuses_everything_but_ints_from_zero(value):
    assert non_negative_int(0, "begin_iter") == 0
    with pytest.raises(ConfigError, match=rf"^EMAHook begin_iter must be an int >= 0, got {value!r}$"):
        non_negative_int(value, "begin_iter", owner="EMAHook")


@pytest.mark.parametrize("value, bounds, accepted", [
    (0.5, {"low": 0, "high": 1}, True), (1, {"low": 0, "high": 1}, True),
    (1, {"low": 0, "high": 1, "open_high": True}, False), (0, {"low": 0, "open_low": True}, False),
    (float("nan"), {}, False), (float("inf"), {}, False), (True, {}, False), ("1", {}, False),
])
def test_finite_float_takes_finite_numbers_within_bounds(value, bounds, accepted):
    if accepted:
        assert finite_float(value, "x", **bounds) == float(value)
    else:
        with pytest.raises(ConfigError, match=r"^x must be a finite number"):
            finite_float(value, "x", **bounds)


def test_finite_float_names_its_bounds_and_none():
    with pytest.raises(ConfigError, match=r"^decay must be a finite number in \[0, 1\], got 2$"):
        finite_float(2, "decay", low=0, high=1)
    with pytest.raises(ConfigError, match=r"^eps must be a finite number > 0 or None, got -1$"):
        finite_float(-1, "eps", low=0, open_low=True, allow_none=True)
    assert finite_float(None, "eps", allow_none=True) is None


@pytest.mark.parametrize("value", ["no", "false", 0, 1, None])
def test_boolean_takes_only_true_and_false(value):
    assert boolean(True, "by_epoch") is True and boolean(False, "by_epoch") is False
    with pytest.raises(ConfigError, match=r"^by_epoch must be true or false, got "):
        boolean(value, "by_epoch")


def test_one_of_does_not_take_a_bool_for_an_int():
    assert one_of("sum", "reduction", ("none", "mean", "sum")) == "sum"
    with pytest.raises(ConfigError, match=r"^mode must be one of 0, 1; got True$"):
        one_of(True, "mode", (0, 1))
