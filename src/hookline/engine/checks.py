"""Argument checks shared by the engine and the built-in hooks: one clear error each.

Example::

    >>> from hookline.engine.checks import positive_int
    >>> positive_int(3, "interval")
    3
    >>> positive_int(0, "interval", owner="CheckpointHook")
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: CheckpointHook interval must be an int >= 1, got 0
"""

from __future__ import annotations

from typing import Any, Literal, overload

from hookline.core import ConfigError


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
        where = f"{owner} {name}" if owner else name
        raise ConfigError(f"{where} must be an int >= 1, got {value!r}")
    return value
