"""``@hookable``: pre-, post- and exception-hooks on any function or method.

Example::

    >>> from hookline.core import hookable
    >>> @hookable
    ... def divide(a, b):
    ...     return a / b
    >>> _ = divide.pre(lambda args, kwargs: ((args[0] * 10, args[1]), kwargs))
    >>> _ = divide.post(lambda result, args, kwargs: round(result, 2))
    >>> _ = divide.on_error(lambda exc, args, kwargs: float("inf"))
    >>> divide(1, 3), divide(1, 0)
    (3.33, inf)

Around-hooks (``divide.around(wrapper)``) and ``Skip`` are described in
:mod:`hookline.core.around`.

On a method, ``Cls.method.post(h)`` hooks every instance and
``obj.method.post(h)`` only ``obj``; class hooks run first.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any, Protocol, cast

from ._callables import is_coroutine_callable
from ._hookset import (
    Args,
    HookSet,
    Kwargs,
    run_error,
    run_error_async,
    run_post,
    run_post_async,
    run_pre,
    run_pre_async,
    wrappers_of,
)
from ._instances import InstanceTable
from .around import Chain
from .errors import ConfigError, qualified_name
from .event import SKIP, Event
from .priority import PriorityLike


def _register(event: Event, hook: Callable[..., Any] | None, options: dict[str, Any],
              is_async: bool) -> Any:
    if hook is None:
        return lambda fn: _register(event, fn, options, is_async)
    if not is_async and is_coroutine_callable(hook):
        raise ConfigError(
            f"{qualified_name(hook)} is a coroutine function; it can only hook an async "
            f"function, and {event.name.rsplit('.', 1)[0]} is not async"
        )
    return event.register(hook, **options)


class _Registrars:
    """``pre`` / ``around`` / ``post`` / ``on_error`` methods shared by functions and bound methods."""

    def _hook_set(self) -> HookSet:  # pragma: no cover - overridden
        raise NotImplementedError  # abstract

    def pre(self, hook: Callable[..., Any] | None = None, *, priority: PriorityLike = "NORMAL",
            once: bool = False, every: int = 1, when: Callable[..., Any] | None = None) -> Any:
        """Run ``hook(args, kwargs)`` before the call; it returns None (keep the arguments),
        ``(args, kwargs)`` (new ones) or ``Skip(value)`` (skip the call: ``value`` is its result)."""
        hooks = self._hook_set()
        options = dict(priority=priority, once=once, every=every, when=when)
        return _register(hooks.pre, hook, options, hooks.is_async)

    def around(self, hook: Callable[..., Any] | None = None, *, priority: PriorityLike = "NORMAL",
               once: bool = False, every: int = 1, when: Callable[..., Any] | None = None) -> Any:
        """Run ``hook(call, args, kwargs)`` instead of the call; it calls ``call(*args, **kwargs)``
        (the inner wrappers, then the function) as it likes and returns the result."""
        hooks = self._hook_set()
        options = dict(priority=priority, once=once, every=every, when=when)
        return _register(hooks.around, hook, options, hooks.is_async)

    def post(self, hook: Callable[..., Any] | None = None, *, priority: PriorityLike = "NORMAL",
             once: bool = False, every: int = 1, when: Callable[..., Any] | None = None) -> Any:
        """Run ``hook(result, args, kwargs)`` after the call; a non-None return replaces the result."""
        hooks = self._hook_set()
        options = dict(priority=priority, once=once, every=every, when=when)
        return _register(hooks.post, hook, options, hooks.is_async)

    def on_error(self, hook: Callable[..., Any] | None = None, *, priority: PriorityLike = "NORMAL",
                 once: bool = False, every: int = 1, when: Callable[..., Any] | None = None) -> Any:
        """Run ``hook(exc, args, kwargs)`` when the call raises; a non-None return is the result."""
        hooks = self._hook_set()
        options = dict(priority=priority, once=once, every=every, when=when)
        return _register(hooks.error, hook, options, hooks.is_async)


class _Dispatch(Protocol):
    """``HookableFunction``'s dispatch function, which knows its owner."""

    __hookline_owner__: HookableFunction

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class HookableFunction(_Registrars):
    """The object ``@hookable`` returns. Call it like the original."""

    # copied from the original by functools.update_wrapper
    __wrapped__: Callable[..., Any]
    __name__: str
    __qualname__: str

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise ConfigError(f"@hookable needs a function or method, got {fn!r}")
        functools.update_wrapper(self, fn)
        self._is_async = inspect.iscoroutinefunction(fn)
        self._hooked = False
        self._count = 0  # hooks registered, class and live instances together (under _lock)
        self._arounds = 0  # of them, around-hooks: a call without any builds no chain
        self._lock = threading.RLock()
        self._class_hooks = HookSet(getattr(fn, "__qualname__", repr(fn)), self._adjust, self._is_async,
                                     self._lock)
        self._instance_hooks: InstanceTable[HookSet] = InstanceTable(
            lambda obj: HookSet(f"{type(obj).__qualname__}.{fn.__name__}[instance]", self._adjust,
                                 self._is_async, self._lock),
            on_drop=HookSet.detach,
        )
        self._dispatch = self._make_dispatch()

    def _hook_set(self) -> HookSet:
        return self._class_hooks

    def _adjust(self, delta: int, around_delta: int = 0) -> None:
        # called with self._lock held (by HookSet); calls read _hooked and _arounds without a lock
        self._arounds += around_delta
        self._count += delta
        self._hooked = self._count > 0

    # -- calling ------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._hooked:
            return self._call_hooked(args, kwargs)
        return self.__wrapped__(*args, **kwargs)

    def _make_dispatch(self) -> _Dispatch:
        """The function ``obj.method(...)`` ends in: one flag test, then the original.

        ``BoundHookable`` passes the instance as the first positional argument,
        so ``args`` is forwarded as is (no new tuple per call).
        """
        fn = self.__wrapped__
        owner = self

        def dispatch(*args: Any, **kwargs: Any) -> Any:
            if owner._hooked:
                return owner._call_hooked(args, kwargs)
            return fn(*args, **kwargs)

        setattr(dispatch, "__hookline_owner__", owner)  # read by BoundHookable
        for name in ("__module__", "__name__", "__qualname__"):  # errors name the method
            if hasattr(fn, name):
                setattr(dispatch, name, getattr(fn, name))
        return cast(_Dispatch, dispatch)

    def _call_hooked(self, args: Args, kwargs: Kwargs) -> Any:
        sets: tuple[HookSet, ...] = (self._class_hooks,)
        if self._instance_hooks and args:  # a method: add the instance's own hooks
            instance = self._instance_hooks.get(args[0])
            if instance is not None:
                sets = (self._class_hooks, instance)
        return self._invoke(sets, args, kwargs)

    def _invoke(self, sets: tuple[HookSet, ...], args: Args, kwargs: Kwargs) -> Any:
        if self._is_async:
            return self._invoke_async(sets, args, kwargs)
        args, kwargs, skip = run_pre(sets, args, kwargs)
        if skip is not None:
            return run_post(sets, skip.value, args, kwargs)
        if self._arounds:
            return self._invoke_chain(sets, args, kwargs)
        try:
            result = self.__wrapped__(*args, **kwargs)
        except Exception as exc:
            fallback = run_error(sets, exc, args, kwargs)
            if fallback is SKIP:
                raise
            return fallback
        return run_post(sets, result, args, kwargs)

    def _invoke_chain(self, sets: tuple[HookSet, ...], args: Args, kwargs: Kwargs) -> Any:
        """The call inside its around-hooks (there may be none for this instance)."""
        wrappers = wrappers_of(sets)
        chain = Chain(wrappers, self.__wrapped__)
        try:
            result = chain.run(0, args, kwargs)
        except Exception as exc:
            if not chain.raised_by_function(exc):
                raise  # an around-hook's HookError: error hooks see the function's exceptions only
            fallback = run_error(sets, exc, args, kwargs)
            if fallback is SKIP:
                raise
            return fallback
        return run_post(sets, result, args, kwargs)

    async def _invoke_async(self, sets: tuple[HookSet, ...], args: Args, kwargs: Kwargs) -> Any:
        args, kwargs, skip = await run_pre_async(sets, args, kwargs)
        if skip is not None:
            return await run_post_async(sets, skip.value, args, kwargs)
        wrappers = wrappers_of(sets)
        chain = Chain(wrappers, self.__wrapped__) if wrappers else None
        try:
            if chain is None:
                result = await self.__wrapped__(*args, **kwargs)
            else:
                result = await chain.run_async(0, args, kwargs)
        except Exception as exc:
            if chain is not None and not chain.raised_by_function(exc):
                raise
            fallback = await run_error_async(sets, exc, args, kwargs)
            if fallback is SKIP:
                raise
            return fallback
        return await run_post_async(sets, result, args, kwargs)

    # -- methods ------------------------------------------------------------------
    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        return BoundHookable(self._dispatch, obj)

    def __repr__(self) -> str:
        return f"<hookable {qualified_name(self.__wrapped__)}>"  # a partial has no __qualname__

    def __reduce__(self) -> str:
        # Pickled by reference, like a function: the name in its module.
        return self.__qualname__


class BoundHookable(functools.partial[Any], _Registrars):
    """``obj.method`` for a hookable method: calls it, and hooks only ``obj``.

    A C-level ``functools.partial`` (created per attribute access, like a
    bound method, and never stored on the instance, so pickling and copying
    are unaffected).
    """

    __slots__ = ()
    func: _Dispatch  # always HookableFunction._dispatch

    def _owner(self) -> HookableFunction:
        return self.func.__hookline_owner__

    def _hook_set(self) -> HookSet:
        return self._owner()._instance_hooks.setdefault(self.args[0])  # noqa: SLF001 - its bound view

    @property
    def __wrapped__(self) -> Callable[..., Any]:
        method: Callable[..., Any] = self._owner().__wrapped__.__get__(self.args[0])
        return method

    @property
    def __self__(self) -> Any:
        return self.args[0]

    @property
    def __func__(self) -> Callable[..., Any]:
        """What ``BoundHookable(__func__, __self__)`` binds again: ``weakref.WeakMethod``
        (and blinker's weak receivers) keep ``obj.method`` this way."""
        return self.func

    # like bound methods: obj.method == obj.method (a new object per access)
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BoundHookable):
            return NotImplemented
        return self.func is other.func and self.args[0] is other.args[0]

    def __hash__(self) -> int:
        return hash((id(self.func), id(self.args[0])))

    def __repr__(self) -> str:
        return f"<bound hookable {self._owner().__qualname__} of {self.args[0]!r}>"

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, str]]:
        # Like a bound method: the instance and the attribute name.
        return getattr, (self.args[0], self._owner().__name__)


def hookable(fn: Callable[..., Any]) -> HookableFunction:
    """Make ``fn`` (a function or method, sync or async) accept pre/post/error hooks.

    With no hooks registered, a call costs a fraction of a microsecond more
    than calling ``fn`` directly.
    """
    return HookableFunction(fn)
