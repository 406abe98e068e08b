"""Argument checks shared by the engine and the built-in hooks: one clear error each.

Each check returns the value when it is acceptable and otherwise raises a
:class:`ConfigError` that names the owner, the argument, what is accepted
and what was given. ``bool`` is never taken for a number (``True`` is not
an interval), NaN is never a number a setting can have, and a float that
should be finite may not be infinite either.

Example::

    >>> from hookline.engine.checks import finite_float, non_negative_int, positive_int
    >>> positive_int(3, "interval"), non_negative_int(0, "begin_iter")
    (3, 0)
    >>> positive_int(0, "interval", owner="CheckpointHook")
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: CheckpointHook interval must be an int >= 1, got 0
    >>> finite_float(float("nan"), "lr", low=0, owner="optimizer")
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: optimizer lr must be a finite number >= 0, got nan
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, overload

from hookline.core import ConfigError

__all__ = ["boolean", "finite_float", "finite_positive_float", "is_number", "non_negative_int",
           "one_of", "positive_int"]


def _where(owner: str, name: str) -> str:
    return f"{owner} {name}" if owner else name


def is_number(value: Any) -> bool:
    """True for an int or a float (NaN included), False for a bool or anything else.

    Example::

        >>> is_number(3), is_number(0.5), is_number(True), is_number("1")
        (True, True, False, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@overload
def positive_int(value: Any, name: str, *, owner: str = "", allow_none: Literal[False] = False
                 ) -> int: ...


@overload
def positive_int(value: Any, name: str, *, owner: str = "", allow_none: bool) -> int | None: ...


def positive_int(value: Any, name: str, *, owner: str = "", allow_none: bool = False) -> int | None:
    """``value`` when it is an int >= 1 (or None with ``allow_none``), else a :class:`ConfigError`
    naming ``owner`` and ``name``."""
    if value is None and allow_none:
        return value
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{_where(owner, name)} must be an int >= 1, got {value!r}")
    return value


@overload
def non_negative_int(value: Any, name: str, *, owner: str = "",
                     allow_none: Literal[False] = False) -> int: ...


@overload
def non_negative_int(value: Any, name: str, *, owner: str = "", allow_none: bool) -> int | None: ...


def non_negative_int(value: Any, name: str, *, owner: str = "", allow_none: bool = False
                     ) -> int | None:
    """``value`` when it is an int >= 0 (or None with ``allow_none``).

    Example::

        >>> non_negative_int(-2, "num_workers", owner="train_dataloader")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: train_dataloader num_workers must be an int >= 0, got -2
    """
    if value is None and allow_none:
        return value
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{_where(owner, name)} must be an int >= 0, got {value!r}")
    return value


@overload
def finite_float(value: Any, name: str, *, owner: str = "", low: float | None = None,
                 high: float | None = None, open_low: bool = False, open_high: bool = False,
                 allow_none: Literal[False] = False) -> float: ...


@overload
def finite_float(value: Any, name: str, *, owner: str = "", low: float | None = None,
                 high: float | None = None, open_low: bool = False, open_high: bool = False,
                 allow_none: bool) -> float | None: ...


def finite_float(value: Any, name: str, *, owner: str = "", low: float | None = None,
                 high: float | None = None, open_low: bool = False, open_high: bool = False,
                 allow_none: bool = False) -> float | None:
    """``float(value)`` when it is a finite number within the bounds (inclusive unless
    ``open_low`` / ``open_high``); None passes with ``allow_none``.

    Example::

        >>> finite_float(0.9, "decay", low=0, high=1)
        0.9
        >>> finite_float(2, "decay", low=0, high=1, owner="EMAHook")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: EMAHook decay must be a finite number in [0, 1], got 2
    """
    if value is None and allow_none:
        return None
    if is_number(value) and math.isfinite(value) \
            and (low is None or value > low or (value == low and not open_low)) \
            and (high is None or value < high or (value == high and not open_high)):
        return float(value)
    if low is not None and high is not None:
        bounds = f" in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
    elif low is not None:
        bounds = f" {'>' if open_low else '>='} {low:g}"
    elif high is not None:
        bounds = f" {'<' if open_high else '<='} {high:g}"
    else:
        bounds = ""
    none = " or None" if allow_none else ""
    raise ConfigError(f"{_where(owner, name)} must be a finite number{bounds}{none}, got {value!r}")


def finite_positive_float(value: Any, name: str, *, owner: str = "") -> float:
    """``float(value)`` when it is a finite number > 0.

    Example::

        >>> finite_positive_float(-1.0, "max_norm", owner="clip_grad")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: clip_grad max_norm must be a finite number > 0, got -1.0
    """
    return finite_float(value, name, owner=owner, low=0, open_low=True)


@overload
def boolean(value: Any, name: str, *, owner: str = "", allow_none: Literal[False] = False
            ) -> bool: ...


@overload
def boolean(value: Any, name: str, *, owner: str = "", allow_none: bool) -> bool | None: ...


def boolean(value: Any, name: str, *, owner: str = "", allow_none: bool = False) -> bool | None:
    """``value`` when it is True or False (or None with ``allow_none``): ``"no"``, ``0`` and
    ``"false"`` are not booleans, so a typo cannot switch a setting on.

    Example::

        >>> boolean("no", "by_epoch", owner="CheckpointHook")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: CheckpointHook by_epoch must be true or false, got 'no'
    """
    if value is None and allow_none:
        return None
    if not isinstance(value, bool):
        none = " (or null)" if allow_none else ""
        raise ConfigError(f"{_where(owner, name)} must be true or false{none}, got {value!r}")
    return value


def one_of(value: Any, name: str, choices: Sequence[Any], *, owner: str = "") -> Any:
    """``value`` when it is one of ``choices``.

    Example::

        >>> one_of("avg", "reduction", ("none", "mean", "sum"), owner="loss_fn")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: loss_fn reduction must be one of 'none', 'mean', 'sum'; got 'avg'
    """
    if not any(type(choice) is type(value) and choice == value for choice in choices):
        listing = ", ".join(repr(c) for c in choices)
        raise ConfigError(f"{_where(owner, name)} must be one of {listing}; got {value!r}")
    return value
