"""EventBus: named events created on demand, or a fixed, strict set of names.

Example::

    >>> from hookline.core import EventBus
    >>> bus = EventBus(["start", "stop"])
    >>> @bus.on("start")
    ... def announce(job):
    ...     return f"{job} started"
    >>> bus.emit("start", "backup")
    ['backup started']
    >>> bus.on("strat", print)
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: unknown event 'strat'; did you mean 'start'? (accepted: start, stop)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, overload

from .errors import ConfigError
from .event import DECORATE, Event
from .handles import HookHandle


class EventBus:
    """A collection of :class:`Event` objects addressed by name.

    With ``events`` given, the bus is strict: using any other name is a
    :class:`ConfigError` that suggests the closest names. A mapping of names
    to argument names (pluggy's hookspecs) also fits each hook to the
    arguments it names (:mod:`hookline.core.spec`)::

        >>> bus = EventBus({"process": ("data", "config"), "lookup": ("key",)})
        >>> _ = bus.on("process", lambda config: config["x"])
        >>> bus.emit("process", data=3, config={"x": 7})
        [7]
    """

    def __init__(self, events: Iterable[str] | Mapping[str, Sequence[str] | None] | None = None
                 ) -> None:
        if isinstance(events, str):  # EventBus("start") would be events 's', 't', 'a', 'r'
            raise ConfigError(f"EventBus takes a list of event names, got the string {events!r}; "
                              f"write EventBus([{events!r}])")
        self._strict = events is not None
        self._events: dict[str, Event] = {}
        for name in events or ():
            if not isinstance(name, str):
                raise ConfigError(f"event names must be strings, got {name!r}")
            self._events[name] = Event(name, events[name] if isinstance(events, Mapping)
                                       else None)

    def _unknown(self, name: str) -> ConfigError:
        return ConfigError.unknown("event", name, self._events)

    def event(self, name: str) -> Event:
        """The :class:`Event` called ``name`` (created on first use unless strict)."""
        event = self._events.get(name)
        if event is None:
            if self._strict:
                raise self._unknown(name)
            # setdefault is atomic: threads asking for a new name at once all get the same Event
            event = self._events.setdefault(name, Event(name))
        return event

    @overload
    def on(self, name: str, **options: Any) -> Callable[[Callable[..., Any]], HookHandle]: ...

    @overload
    def on(self, name: str, fn: Callable[..., Any], **options: Any) -> HookHandle: ...

    def on(self, name: str, fn: Callable[..., Any] = DECORATE,
           **options: Any) -> HookHandle | Callable[[Callable[..., Any]], HookHandle]:
        """Register ``fn`` on event ``name``; a decorator when ``fn`` is omitted."""
        if not isinstance(name, str):
            raise ConfigError(f"bus.on takes the event name first, as in bus.on('saved', fn) or "
                              f"@bus.on('saved'); got {ConfigError.brief(name)} as the name")
        return self.event(name).register(fn, **options)

    def _existing(self, name: str) -> Event | None:
        event = self._events.get(name)
        if event is None and self._strict:
            raise self._unknown(name)
        return event

    def emit(self, name: str, /, *args: Any, **kwargs: Any) -> list[Any]:
        """Emit event ``name``; an event nobody registered on returns ``[]``."""
        event = self._existing(name)
        return event.emit(*args, **kwargs) if event is not None else []

    def emit_first(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """The first non-None result of event ``name``'s hooks."""
        event = self._existing(name)
        return event.emit_first(*args, **kwargs) if event is not None else None

    async def emit_async(self, name: str, /, *args: Any, **kwargs: Any) -> list[Any]:
        """Emit event ``name``, awaiting coroutine hooks."""
        event = self._existing(name)
        return await event.emit_async(*args, **kwargs) if event is not None else []

    def names(self) -> list[str]:
        """The event names known to the bus."""
        return list(self._events.copy())

    def __contains__(self, name: object) -> bool:
        return name in self._events

    def __repr__(self) -> str:
        kind = "strict " if self._strict else ""
        return f"<{kind}EventBus {self.names()}>"
