"""Hook priorities: MMEngine's names and values; a lower value runs earlier.

Example::

    >>> from hookline.core import Priority
    >>> Priority.get("high"), Priority.get(45), Priority.get(Priority.LOW)
    (<Priority.HIGH: 30>, 45, <Priority.LOW: 70>)
"""

from __future__ import annotations

from enum import IntEnum
from typing import Union

from .errors import ConfigError

PriorityLike = Union["Priority", str, int]


class Priority(IntEnum):
    """Named priorities. Ints from 0 (first) to 100 (last) are accepted too."""

    HIGHEST = 0
    VERY_HIGH = 10
    HIGH = 30
    ABOVE_NORMAL = 40
    NORMAL = 50
    BELOW_NORMAL = 60
    LOW = 70
    VERY_LOW = 90
    LOWEST = 100

    @classmethod
    def get(cls, value: PriorityLike) -> int:
        """Turn a member, a name in any case, or an int 0..100 into a priority.

        Named values come back as members, other ints as plain ints.
        Anything else is a :class:`ConfigError` listing the names.
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            member = cls.__members__.get(value.strip().upper())
            if member is not None:
                return member
        elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 100:
            try:
                return cls(value)
            except ValueError:
                return value
        names = ", ".join(f"{m.name}={m.value}" for m in cls)
        raise ConfigError(
            f"invalid priority {value!r}: use one of {names} (any case), or an int from 0 to 100"
        )
