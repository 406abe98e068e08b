"""hookline.core: generic hooks in pure Python (no torch import).

Pre-, around-, post- and exception-hooks on functions (:func:`hookable`, :class:`Skip`), event hooks
(:class:`Event`, :class:`EventBus`, :func:`observe`), removable handles,
priorities, filters (``once``, ``every``, ``when``), async emission, and a
config :class:`Registry`.

Example::

    >>> from hookline.core import Event
    >>> saved = Event("saved")
    >>> handle = saved.register(lambda path: f"backed up {path}")
    >>> saved.emit("model.pth")
    ['backed up model.pth']
"""

from .around import Skip
from .bus import EventBus
from .errors import ConfigError, HookError
from .event import Event
from .handles import HandleGroup, HookHandle
from .hookable import hookable
from .observed import observe, observed
from .priority import Priority
from .registry import Registry

__all__ = [
    "Priority",
    "HookHandle",
    "HandleGroup",
    "Event",
    "EventBus",
    "hookable",
    "Skip",
    "observed",
    "observe",
    "Registry",
    "HookError",
    "ConfigError",
]
