"""Observed attributes: assignments notify hooks, per instance or per class.

Example (a temperature sensor that notifies its observers)::

    >>> from hookline.core import observed, observe
    >>> class Sensor:
    ...     celsius = observed(default=20.0)
    >>> alerts = []
    >>> def too_hot(sensor, name, old, new):
    ...     alerts.append(f"{name}: {old} -> {new}")
    >>> kitchen = Sensor()
    >>> handle = observe(kitchen, "celsius", too_hot, when=lambda s, n, old, new: new > 30)
    >>> kitchen.celsius = 25; kitchen.celsius = 31
    >>> alerts
    ['celsius: 25 -> 31']
    >>> handle.remove()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._instances import InstanceTable
from .errors import ConfigError
from .event import Event
from .handles import HookHandle
from .priority import PriorityLike

_MISSING: Any = object()


class observed:  # lower case: used like a builtin descriptor (property, observed)
    """A watchable attribute. ``observe(obj, name, fn)`` runs ``fn(obj, name, old, new)``
    after every assignment.

    Before the first assignment the attribute reads as ``default`` (an
    ``AttributeError`` when there is none); ``old`` is then ``default`` or None.
    """

    def __init__(self, default: Any = _MISSING) -> None:
        self.default = default
        self.name = "?"
        self._owner: type | None = None
        self._class_event = Event("observed")
        self._instances: InstanceTable[Event] = InstanceTable(
            lambda obj: Event(f"{type(obj).__qualname__}.{self.name}"))

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self._owner = owner
        self._class_event.name = f"{owner.__qualname__}.{name}"

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            return obj.__dict__[self.name]
        except KeyError:
            if self.default is _MISSING:
                raise AttributeError(
                    f"{type(obj).__name__!r} object has no value for {self.name!r} yet"
                ) from None
            return self.default

    def __set__(self, obj: Any, value: Any) -> None:
        values = obj.__dict__
        old = values.get(self.name, None if self.default is _MISSING else self.default)
        values[self.name] = value
        # Reading Event._calls skips emit() when no hook is registered: every assignment pays this.
        if self._class_event._calls:  # noqa: SLF001
            self._class_event.emit(obj, self.name, old, value)
        if self._instances:
            event = self._instances.get(obj)
            if event is not None and event._calls:  # noqa: SLF001
                event.emit(obj, self.name, old, value)

    def _add_hook(self, target: Any, fn: Callable[..., Any], priority: PriorityLike, once: bool,
                  every: int, when: Callable[..., bool] | None) -> HookHandle:
        """Register ``fn`` for ``target``: one instance, or a class (its instances and its subclasses')."""
        if isinstance(target, type):
            # A descriptor inherited from a base class is shared with it: this hook sees only
            # assignments to instances of ``target`` (``every`` counts only those).
            gate = None if target is self._owner else _instances_of(target)
            return self._class_event.register(fn, priority=priority, once=once, every=every, when=when,
                                              _gate=gate)
        return self._instances.setdefault(target).register(fn, priority=priority, once=once, every=every,
                                                           when=when)


def _instances_of(cls: type) -> Callable[..., bool]:
    """A gate that lets through the assignments to instances of ``cls`` only."""
    return lambda obj, *rest: isinstance(obj, cls)


def _find_observed(cls: type, name: str) -> observed:
    for klass in cls.__mro__:
        attr = klass.__dict__.get(name)
        if attr is not None:
            if isinstance(attr, observed):
                return attr
            break
    watchable = sorted(
        {n for k in cls.__mro__ for n, a in vars(k).items() if isinstance(a, observed)}
    )
    hint = f" (observed attributes of {cls.__name__}: {', '.join(watchable)})" if watchable else ""
    raise ConfigError(
        f"{cls.__name__}.{name} is not an observed attribute; declare it in the class "
        f"as '{name} = observed()'{hint}"
    )


def observe(target: Any, name: str, fn: Callable[[Any, str, Any, Any], Any], *,
            priority: PriorityLike = "NORMAL", once: bool = False, every: int = 1,
            when: Callable[..., bool] | None = None) -> HookHandle:
    """Call ``fn(obj, name, old, new)`` after each assignment to ``target.name``.

    ``target`` is an instance (only it is watched) or a class (every instance
    of it and its subclasses). Returns a :class:`HookHandle`.
    """
    cls = target if isinstance(target, type) else type(target)
    descriptor = _find_observed(cls, name)
    return descriptor._add_hook(target, fn, priority, once, every, when)  # noqa: SLF001 - its front end
