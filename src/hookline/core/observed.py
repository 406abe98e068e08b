"""Observed attributes: assignments, reads and deletions notify hooks, per instance or per class.

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
    >>> reads = observe(kitchen, "celsius", lambda s, name, value: alerts.append(f"read {value}"), on="get")
    >>> kitchen.celsius, alerts[-1]
    (31, 'read 31')
    >>> handle.remove(); reads.remove()
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

from ._callables import check_shape
from ._instances import InstanceTable
from .errors import ConfigError
from .event import Event
from .handles import HookHandle
from .priority import PriorityLike

_MISSING: Any = object()
_T = TypeVar("_T")
#: what ``observe(..., on=...)`` accepts, and the hook signature of each
ON = ("set", "get", "delete")
SIGNATURES = {"set": "fn(obj, name, old, new)", "get": "fn(obj, name, value)",
              "delete": "fn(obj, name, old)"}


class _Watchers:
    """The set, get and delete events of one observed attribute (of a class, or one instance).

    ``reads`` counts every get-observer of the attribute, the class's and
    all instances' together, so that a read with nobody watching costs one
    attribute test.
    """

    __slots__ = ("set", "get", "delete", "_counted", "_descriptor")

    def __init__(self, name: str, descriptor: observed[Any]) -> None:
        self.set = Event(name)
        self.get = Event(f"{name}.get")
        self.delete = Event(f"{name}.delete")
        self._counted = 0
        self._descriptor = descriptor
        self.get.on_change = self._get_changed

    def event(self, on: str) -> Event:
        event: Event = getattr(self, on)
        return event

    def _get_changed(self, event: Event) -> None:
        with self._descriptor.lock:
            count = len(event)
            self._descriptor.reads += count - self._counted
            self._counted = count

    def detach(self) -> None:
        """The instance is gone: its get-observers no longer count."""
        with self._descriptor.lock:
            self._descriptor.reads -= self._counted
            self._counted = 0


def _values(obj: Any, attribute: Any) -> dict[str, Any]:
    """``obj.__dict__``, where observed attributes keep their values; a class whose
    ``__slots__`` leave it out is one clear error."""
    try:
        return obj.__dict__  # type: ignore[no-any-return]
    except AttributeError:
        raise ConfigError(
            f"{type(obj).__qualname__}.{attribute.name} is observed, and observed attributes keep "
            f"their values in the instance's __dict__, which {type(obj).__qualname__}'s __slots__ "
            "leave out: add '__dict__' to __slots__") from None


class observed(Generic[_T]):  # lower case: used like a builtin descriptor (property, observed)
    """A watchable attribute. ``observe(obj, name, fn)`` runs ``fn(obj, name, old, new)``
    after every assignment; ``on="get"`` and ``on="delete"`` watch reads and deletions.

    Before the first assignment (and after ``del``) the attribute reads as
    ``default`` (an ``AttributeError`` when there is none); ``old`` is then
    ``default`` or None.

    Generic in the value's type: type checkers read ``count = observed(0)`` as an ``int``
    attribute; ``observed()`` without a default is ``Any`` unless annotated
    (``name: observed[str] = observed()``).
    """

    @overload
    def __init__(self: observed[Any]) -> None: ...

    @overload
    def __init__(self, default: _T) -> None: ...

    def __init__(self, default: Any = _MISSING) -> None:
        self.default = default
        self.name = "?"
        #: where instances keep the value: the attribute's name (``__set_name__``), or a key of
        #: its own when the descriptor was attached after the class was made
        self.key = f"?observed-{id(self):x}"
        self._owner: type | None = None
        self.lock = threading.RLock()
        self.reads = 0  # get-observers registered, class and live instances together (under lock)
        self._reading = threading.local()  # (id(obj)) being notified of a read in this thread
        self._class = _Watchers("observed", self)
        self._instances: InstanceTable[_Watchers] = InstanceTable(
            lambda obj: _Watchers(f"{type(obj).__qualname__}.{self.name}", self), on_drop=_Watchers.detach)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = self.key = name
        self._owner = owner
        label = f"{owner.__qualname__}.{name}"
        self._class.set.name, self._class.get.name, self._class.delete.name = (
            label, f"{label}.get", f"{label}.delete")

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> observed[_T]: ...

    @overload
    def __get__(self, obj: object, objtype: type | None = None) -> _T: ...

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            value = _values(obj, self)[self.key]
        except KeyError:
            if self.default is _MISSING:
                raise AttributeError(
                    f"{type(obj).__name__!r} object has no value for {self.name!r} yet"
                ) from None
            value = self.default
        if self.reads:  # every read pays this test; the rest only while someone watches reads
            self._notify_read(obj, value)
        return value

    def _notify_read(self, obj: Any, value: Any) -> None:
        # A get-observer that reads the attribute itself does not notify again (no recursion).
        busy: set[int] | None = getattr(self._reading, "objects", None)
        if busy is None:
            busy = self._reading.objects = set()
        if id(obj) in busy:
            return
        busy.add(id(obj))
        try:
            self._emit("get", obj, value)
        finally:
            busy.discard(id(obj))

    def __set__(self, obj: Any, value: _T) -> None:
        values = _values(obj, self)
        old = values.get(self.key, None if self.default is _MISSING else self.default)
        values[self.key] = value
        self._emit("set", obj, old, value)

    def __delete__(self, obj: Any) -> None:
        try:
            old = _values(obj, self).pop(self.key)
        except KeyError:
            raise AttributeError(f"{type(obj).__name__!r} object has no value for {self.name!r} "
                                 "to delete") from None
        self._emit("delete", obj, old)

    def _emit(self, on: str, obj: Any, *values: Any) -> None:
        # Reading Event._calls skips emit() when no hook is registered: every access pays this.
        event = self._class.event(on)
        if event._calls:  # noqa: SLF001
            event.emit(obj, self.name, *values)
        if self._instances:
            watchers = self._instances.get(obj)
            if watchers is not None:
                event = watchers.event(on)
                if event._calls:  # noqa: SLF001
                    event.emit(obj, self.name, *values)

    def _add_hook(self, target: Any, fn: Callable[..., Any], on: str, priority: PriorityLike, once: bool,
                  every: int, when: Callable[..., bool] | None) -> HookHandle:
        """Register ``fn`` for ``target``: one instance, or a class (its instances and its subclasses')."""
        if isinstance(target, type):
            # A descriptor inherited from a base class is shared with it: this hook sees only
            # the accesses to instances of ``target`` (``every`` counts only those).
            gate = None if target is self._owner else _instances_of(target)
            return self._class.event(on).register(fn, priority=priority, once=once, every=every, when=when,
                                                  _gate=gate)
        return self._instances.setdefault(target).event(on).register(fn, priority=priority, once=once,
                                                                     every=every, when=when)


def _instances_of(cls: type) -> Callable[..., bool]:
    """A gate that lets through the accesses to instances of ``cls`` only."""
    return lambda obj, *rest: isinstance(obj, cls)


def _find_observed(cls: type, name: str) -> observed[Any]:
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


def _check_observer(fn: Any, when: Any, on: str, label: str) -> None:
    """A :class:`ConfigError` for an observer (or ``when``) that cannot take ``on``'s arguments."""
    expected = SIGNATURES[on]
    count = expected.count(",") + 1
    check_shape(fn, count, f"observer of {label} (on={on!r})", expected)
    if callable(when):
        check_shape(when, count, f"when-predicate of {label} (on={on!r})",
                    expected.replace("fn(", "when(", 1))


def observe(target: Any, name: str, fn: Callable[..., Any], *, on: str = "set",
            priority: PriorityLike = "NORMAL", once: bool = False, every: int = 1,
            when: Callable[..., bool] | None = None) -> HookHandle:
    """Watch ``target.name``: assignments (``on="set"``), reads (``"get"``) or deletions (``"delete"``).

    ``fn`` is called after the access: ``fn(obj, name, old, new)`` for an
    assignment, ``fn(obj, name, value)`` for a read (the value the reader
    gets), ``fn(obj, name, old)`` for a deletion. Its return value is ignored.
    ``target`` is an instance (only it is watched) or a class (every instance
    of it and its subclasses). Returns a :class:`HookHandle`.
    """
    if on not in ON:
        raise ConfigError.unknown("observe event (on=...)", on, ON)
    cls = target if isinstance(target, type) else type(target)
    descriptor = _find_observed(cls, name)
    _check_observer(fn, when, on, f"{cls.__qualname__}.{name}")
    return descriptor._add_hook(target, fn, on, priority, once, every, when)  # noqa: SLF001 - its front end
