"""``mmengine.runner.priority``: ``Priority`` (hookline's) and ``get_priority``.

Example::

    >>> from hookline.compat.mmengine.runner.priority import Priority, get_priority
    >>> get_priority("LOW"), get_priority(Priority.HIGH), get_priority(30)
    (70, 30, 30)
"""

from __future__ import annotations

from typing import Any

from hookline.core import Priority

__all__ = ["Priority", "get_priority"]


def get_priority(priority: Any) -> int:
    """A priority name, ``Priority`` member or int 0..100 as its int value."""
    return int(Priority.get(priority))
