"""Event: a named hook point with priorities, filters and removable hooks.

The call list is precomputed at registration (pluggy's lesson), and so is
``emit`` itself: a function generated for the current hooks
(:mod:`._emitter`: one unrolled call per hook, no loop, no argument tuple
unpacked per hook), stored on the event, so ``event.emit(x)`` costs about
what a plain ``for f in hooks: f(x)`` does.

**Threads.** ``register``, ``remove`` and ``clear`` hold the event's lock;
``emit`` takes none. It reads the published call list once (one attribute
load, atomic) and walks it; a removal blanks the hook out of every list an
emission may still be walking (one atomic item store in the list, and one in the
generated emitter's closure). The ``every`` counter
and the ``once`` claim are atomic too, so a ``once`` hook runs exactly once
however many threads emit.

Example::

    >>> from hookline.core import Event
    >>> started = Event("started")
    >>> @started.register(priority="HIGH")
    ... def greet(name):
    ...     return f"hello {name}"
    >>> handle = started.register(lambda name: name.upper(), every=2)
    >>> started.emit("ada"), started.emit("ada")
    (['hello ada'], ['hello ada', 'ADA'])
    >>> handle.remove(); len(started)
    1
"""

from __future__ import annotations

import inspect
import itertools
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from ._callables import is_coroutine_callable
from ._emitter import Emitter, build_emitter, refusing
from .errors import ConfigError, HookError
from .handles import HookHandle, hook_behind
from .priority import Priority, PriorityLike
from .spec import check_emission, check_spec, checking, fit_to_spec

if TYPE_CHECKING:
    from .handles import TypedHookHandle

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: returned by a filtered hook that did not run this time
SKIP: Any = object()


class _Decorate:
    """The default of a registrar's hook argument: none given, so it returns a decorator
    (an explicit ``None`` is a :class:`ConfigError`, not a decorator)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<decorate>"


#: ``register(fn=DECORATE)``: no hook given, return a decorator
DECORATE: Any = _Decorate()


def _skipped(*args: Any, **kwargs: Any) -> Any:
    return SKIP


class _Calls(list[Callable[..., Any]]):
    """The call list of one Event generation, with the entries it was built from."""

    __slots__ = ("name", "entries", "may_skip", "has_async", "cells", "stale", "__weakref__")
    name: str
    entries: tuple[_Entry, ...]
    may_skip: bool  # some call may return SKIP (a filtered or removed hook)
    has_async: bool
    stale: bool  # a newer call list is published: its emitter forwards to the event's
    cells: tuple[Any, ...]  # the emitter's closure cells holding the calls (blanked with them)

    def blank(self, entry: _Entry) -> None:
        """Stop an emission in flight from calling ``entry`` (it returns SKIP instead)."""
        index = self.entries.index(entry)
        self.may_skip = True  # first: an emission that reads the blank also filters it
        self[index] = _skipped
        if self.cells:
            self.cells[index].cell_contents = _skipped


class _Entry:
    __slots__ = ("fn", "priority", "seq", "call", "is_async", "handle")

    def __init__(self, fn: Callable[..., Any], priority: int, seq: int, call: Callable[..., Any],
                 handle: HookHandle) -> None:
        self.fn = fn
        self.priority = priority
        self.seq = seq
        self.call = call
        self.is_async = is_coroutine_callable(fn)
        self.handle = handle


def check_options(once: bool, every: int, when: Callable[..., Any] | None) -> None:
    """Validate the filter options shared by every registration API."""
    if not isinstance(every, int) or isinstance(every, bool) or every < 1:
        raise ConfigError(f"every must be an int >= 1, got {every!r}")
    if when is not None and not callable(when):
        raise ConfigError(f"when must be a callable predicate or None, got {when!r}")
    if not isinstance(once, bool):
        raise ConfigError(f"once must be True or False, got {once!r}")


def filtered(fn: Callable[..., Any], once: bool, every: int, when: Callable[..., Any] | None,
             remove: Callable[[], None], gate: Callable[..., bool] | None = None,
             point: str = "?") -> Callable[..., Any]:
    """Wrap ``fn`` so it honours ``once``/``every``/``when``; returns ``fn`` itself when unfiltered.

    A wrapper returns :data:`SKIP` on the emissions where ``fn`` does not run.
    ``every`` counts every emission the hook sees; ``when`` is checked on the
    emissions ``every`` lets through. ``gate`` (internal) decides which
    emissions the hook sees at all, before ``every`` counts them. A ``when``
    that raises is a :class:`HookError` naming it (and ``fn``) at ``point``.
    """
    if not once and every == 1 and when is None and gate is None:
        return fn
    # Both are atomic under concurrent emissions: ``next`` on a C counter, ``pop`` on a list.
    seen = itertools.count(1)
    token = [True]

    def call(*args: Any, **kwargs: Any) -> Any:
        if gate is not None and not gate(*args, **kwargs):
            return SKIP
        if every != 1 and next(seen) % every:
            return SKIP
        if when is not None:
            try:
                passes = when(*args, **kwargs)
            except HookError:  # a nested hook point's: it names its own hook
                raise
            except Exception as exc:
                raise _predicate_failed(when, fn, point, exc) from exc
            if not passes:
                return SKIP
        if once:
            try:
                token.pop()  # only one emission, in one thread, gets the token
            except IndexError:
                return SKIP
            remove()
        return fn(*args, **kwargs)

    setattr(call, "__hookline_fn__", fn)  # read back by hook_of()
    return call


def _predicate_failed(when: Callable[..., Any], fn: Callable[..., Any], point: str,
                      exc: Exception) -> HookError:
    """The error of a ``when`` predicate that raised: the predicate's, naming the hook too."""
    return HookError(hook_of(when), point, exc, filtering=hook_of(fn))


def hook_of(call: Callable[..., Any]) -> Callable[..., Any]:
    """The user's hook behind a (possibly filtered, possibly spec-fitted) call."""
    fn: Callable[..., Any] = call
    for _ in range(4):  # filtered(fit_to_spec(fn)): two wrappers at most
        inner = getattr(fn, "__hookline_fn__", None)
        if inner is None:
            break
        fn = inner
    return fn


# What the generated emitters fall back on. Module functions, not methods: an emitter
# holding its Event would make a reference cycle (the Event holds its emitter).
def _walker(calls: _Calls, event: weakref.ref[Event]
            ) -> Callable[[tuple[Any, ...], dict[str, Any]], list[Any]]:
    """The loop for the calls an emitter does not unroll (keywords, many arguments or hooks);
    a stale emitter's calls go to the event's current one."""
    name = calls.name

    def walk(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        if calls.stale:
            live = event()
            if live is not None:
                return live.emit(*args, **kwargs)
        results: list[Any] = []
        append = results.append
        try:  # the common call shapes skip building an argument tuple per hook
            if kwargs:
                for call in calls:
                    append(call(*args, **kwargs))
            elif args:
                for call in calls:
                    append(call(*args))
            else:
                for call in calls:
                    append(call())
        except HookError:
            raise
        except Exception as exc:
            raise HookError(hook_of(call), name, exc) from exc
        if calls.may_skip:
            return [r for r in results if r is not SKIP]
        return results
    return walk


def _reporter(calls: _Calls) -> Callable[[BaseException, int], HookError]:
    """How an emitter reports that the hook at ``index`` failed."""
    def failure(exc: BaseException, index: int) -> HookError:
        hook = calls.entries[index].fn if 0 <= index < len(calls.entries) else None
        return HookError(hook, calls.name, exc)
    return failure


def _refuse_method_in_class_body(fn: Any, event: str) -> None:
    """A :class:`ConfigError` for ``@event.register`` on a method in a class body: it would
    register the plain function, which no instance is ever passed to as ``self``."""
    code = getattr(fn, "__code__", None)
    parts = getattr(fn, "__qualname__", "").split(".")
    if (code is None or len(parts) < 2 or parts[-2] == "<locals>" or code.co_argcount < 1
            or code.co_varnames[0] != "self"):
        return
    raise ConfigError(
        f"@register on the method {'.'.join(parts)} in its class body would hook the plain "
        f"function, called without self; register the bound method of an instance instead, "
        f"e.g. event.register(plugin.{parts[-1]}) (bus.on({event!r}, plugin.{parts[-1]}))")


class Event:
    """A hook point. ``register`` hooks, then ``emit`` to call them in priority order."""

    __slots__ = {
        "name": "The event's name (hook errors name it).",
        "args": "The argument names its emissions carry (pluggy's hookspec), or None: "
                "hooks then get every argument as emitted.",
        "emit": "emit(*args, **kwargs) -> list: call every hook with the arguments; return the "
                "results of those that ran. A function generated for the current hooks.",
        "_entries": None, "_calls": None, "_retired": None, "_seq": None, "_lock": None,
        "on_change": "Called with the event after each change of its hooks (or None).",
        "__weakref__": None,
    }
    #: call every hook with the arguments; return the results of those that ran
    #: (rebuilt, with the call list, whenever the hooks change)
    emit: Emitter

    def __init__(self, name: str, args: Sequence[str] | None = None) -> None:
        if not isinstance(name, str):
            raise ConfigError(f"an event name must be a str, got {ConfigError.brief(name)}")
        self.name = name
        #: with ``args``, each hook gets the arguments it names (see :mod:`hookline.core.spec`)
        self.args = None if args is None else check_spec(args, name)
        # Re-entrant: a hook removed by a weakref callback or __del__ that runs inside a
        # locked section (garbage collection) must not deadlock.
        self._lock = threading.RLock()
        self._entries: list[_Entry] = []
        self._retired: list[weakref.ref[_Calls]] = []
        self._seq = 0
        self.on_change: Callable[[Event], None] | None = None
        self._calls, emitter = self._build()
        _EMIT_SLOT.__set__(self, emitter)  # the slot: a subclass's own emit() stays in front

    # -- registration ---------------------------------------------------------
    @overload
    def register(self, *, priority: PriorityLike = ..., once: bool = ...,
                 every: int = ..., when: Callable[..., bool] | None = ...,
                 _gate: Callable[..., bool] | None = ...
                 ) -> Callable[[Callable[_P, _R]], TypedHookHandle[_P, _R]]: ...

    @overload
    def register(self, fn: Callable[_P, _R], *, priority: PriorityLike = ..., once: bool = ...,
                 every: int = ..., when: Callable[..., bool] | None = ...,
                 _gate: Callable[..., bool] | None = ...) -> TypedHookHandle[_P, _R]: ...

    def register(self, fn: Callable[..., Any] = DECORATE, *, priority: PriorityLike = "NORMAL",
                 once: bool = False, every: int = 1,
                 when: Callable[..., bool] | None = None,
                 _gate: Callable[..., bool] | None = None
                 ) -> HookHandle | Callable[[Callable[..., Any]], HookHandle]:
        """Add ``fn``; returns a :class:`HookHandle`.

        Also a decorator, bare (``@event.register``) or with options
        (``@event.register(priority="HIGH")``); the decorated name is then the
        handle, which still calls the function and has ``remove()``. Given a handle (stacked
        decorators: ``@ev.register @other.register def f``), it registers the handle's hook.
        """
        level = Priority.get(priority)
        check_options(once, every, when)
        if fn is DECORATE:
            def decorate(f: Callable[..., Any]) -> HookHandle:
                _refuse_method_in_class_body(f, self.name)
                return self.register(f, priority=level, once=once, every=every, when=when,
                                     _gate=_gate)
            return decorate
        fn = hook_behind(fn)
        if not callable(fn):
            raise ConfigError(f"a hook must be callable, got {ConfigError.brief(fn)} for event "
                              f"{self.name!r}")
        # The remover reads ``entry`` (assigned below) only when it is called.
        handle = HookHandle(lambda: self._remove(entry), fn, self.name)
        target = fn
        if self.args is not None:
            target = fit_to_spec(fn, self.args, self.name)
            when = None if when is None else fit_to_spec(when, self.args, self.name, "when")
        call = filtered(target, once, every, when, handle.remove, _gate, self.name)
        with self._lock:
            entry = _Entry(fn, int(level), self._seq, call, handle)
            self._seq += 1
            index = len(self._entries)
            while index and self._entries[index - 1].priority > entry.priority:
                index -= 1
            self._entries.insert(index, entry)
            self._publish()
        return handle

    def _remove(self, entry: _Entry) -> None:
        with self._lock:
            if entry not in self._entries:
                return
            self._entries.remove(entry)
            # Emissions in flight walk an older call list (or its emitter): blank the
            # hook out of every one still alive, so it is not called later in them.
            for ref in [*self._retired, weakref.ref(self._calls)]:
                calls = ref()
                if calls is not None and entry in calls.entries:
                    calls.blank(entry)
            self._publish()

    def _build(self) -> tuple[_Calls, Emitter]:
        calls = _Calls(e.call for e in self._entries)
        calls.name = self.name
        calls.entries = tuple(self._entries)
        calls.may_skip = any(e.call is not e.fn for e in self._entries)
        calls.has_async = any(e.is_async for e in self._entries)
        calls.stale = False
        calls.cells = ()
        walk = _walker(calls, weakref.ref(self))
        if calls.has_async:
            emit = refusing(calls, walk, self.name)
        else:
            emit, calls.cells = build_emitter(calls, list(calls), walk, _reporter(calls), SKIP)
        if self.args is not None:  # only events with a spec check each emission
            emit = checking(emit, self.args, self.name)
        return calls, emit

    def _publish(self) -> None:
        self._retired = [r for r in self._retired if r() is not None]
        old = self._calls
        if old:
            self._retired.append(weakref.ref(old))
        self._calls, emitter = self._build()
        _EMIT_SLOT.__set__(self, emitter)  # the slot: a subclass's own emit() stays in front
        old.stale = True  # after the new emitter is published: a kept old one forwards to it
        if self.on_change is not None:
            self.on_change(self)

    def clear(self) -> None:
        """Remove every hook (their handles then report ``removed``)."""
        with self._lock:
            entries = list(self._entries)
        for entry in entries:
            entry.handle.remove()

    # -- introspection ----------------------------------------------------------
    @property
    def hooks(self) -> tuple[Callable[..., Any], ...]:
        """The registered callables, in call order."""
        return tuple(e.fn for e in tuple(self._entries))  # a snapshot: other threads may register

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"<Event {self.name!r} with {len(self._entries)} hook(s)>"

    # -- dispatch -------------------------------------------------------------------
    # ``emit`` is an attribute: the function generated for the current call list (_build).
    def emit_first(self, *args: Any, **kwargs: Any) -> Any:
        """Call hooks in order until one returns something other than None; return it."""
        if self.args is not None:
            check_emission(self.args, self.name, args, kwargs)
        calls = self._calls
        if calls.has_async:
            raise ConfigError(
                f"event {self.name!r} has coroutine hooks; use 'await emit_async()'"
            )
        try:
            for call in calls:
                result = call(*args, **kwargs)
                if result is not None and result is not SKIP:
                    return result
        except HookError:
            raise
        except Exception as exc:
            raise HookError(hook_of(call), self.name, exc) from exc
        return None

    async def emit_async(self, *args: Any, **kwargs: Any) -> list[Any]:
        """Like :meth:`emit`, awaiting coroutine hooks (plain hooks are called)."""
        if self.args is not None:
            check_emission(self.args, self.name, args, kwargs)
        results: list[Any] = []
        for call in self._calls:
            try:
                result = call(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
            except HookError:
                raise
            except Exception as exc:
                raise HookError(hook_of(call), self.name, exc) from exc
            if result is not SKIP:
                results.append(result)
        return results


#: ``Event.emit``'s slot. Writing through it (not ``self.emit = ...``) leaves a subclass that
#: defines its own ``emit`` in front, with the generated emitter as its ``super().emit``.
_EMIT_SLOT: Any = Event.__dict__["emit"]
