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

On a method, ``Cls.method.post(h)`` hooks every instance and
``obj.method.post(h)`` only ``obj``; class hooks run first.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, Protocol, cast

from ._instances import InstanceTable
from .errors import ConfigError, HookError, qualified_name
from .event import SKIP, Event, hook_of
from .priority import PriorityLike

# a hooked call's positional and keyword arguments
_Args = tuple[Any, ...]
_Kwargs = dict[str, Any]


class _HookSet:
    """The pre, post and error hook lists of one function (or one instance).

    ``adjust(delta)`` tells the owning :class:`HookableFunction` how many hooks
    were added (or removed); ``is_async`` is whether that function is a coroutine function.
    """

    __slots__ = ("pre", "post", "error", "count", "is_async", "adjust")

    def __init__(self, name: str, adjust: Callable[[int], None], is_async: bool) -> None:
        self.pre = Event(f"{name}.pre")
        self.post = Event(f"{name}.post")
        self.error = Event(f"{name}.on_error")
        self.count = 0
        self.is_async = is_async
        self.adjust: Callable[[int], None] | None = adjust
        for event in (self.pre, self.post, self.error):
            event.on_change = self._changed

    def _changed(self, _event: Event) -> None:
        count = len(self.pre) + len(self.post) + len(self.error)
        if self.adjust is not None:
            self.adjust(count - self.count)
        self.count = count

    def detach(self) -> None:
        """The instance is gone: its hooks no longer count (even if removed later)."""
        if self.adjust is not None:
            self.adjust(-self.count)
            self.adjust = None


def _register(event: Event, hook: Callable[..., Any] | None, options: dict[str, Any],
              is_async: bool) -> Any:
    if hook is None:
        return lambda fn: _register(event, fn, options, is_async)
    if not is_async and inspect.iscoroutinefunction(hook):
        raise ConfigError(
            f"{qualified_name(hook)} is a coroutine function; it can only hook an async "
            f"function, and {event.name.rsplit('.', 1)[0]} is not async"
        )
    return event.register(hook, **options)


# The hook runners read each Event's call list (``Event._calls``) directly: the
# sync ones are the cost of every hooked call.
def _each(sets: tuple[_HookSet, ...], kind: str) -> Iterator[tuple[Callable[..., Any], str]]:
    """Yield ``(call, point)`` for the hooks of one kind, class hooks first."""
    for hooks in sets:
        event: Event = getattr(hooks, kind)
        for call in event._calls:  # noqa: SLF001
            yield call, event.name


async def _call_async(call: Callable[..., Any], point: str, *args: Any) -> Any:
    try:
        result = call(*args)
        return await result if inspect.isawaitable(result) else result
    except HookError:
        raise
    except Exception as exc:
        raise HookError(hook_of(call), point, exc) from exc


def _new_arguments(changed: Any, call: Callable[..., Any], point: str) -> tuple[_Args, _Kwargs]:
    """Validate what a pre-hook returned other than None (keep): it must be ``(args, kwargs)``."""
    if (isinstance(changed, tuple) and len(changed) == 2
            and isinstance(changed[0], (tuple, list)) and isinstance(changed[1], dict)):
        return tuple(changed[0]), changed[1]
    problem = TypeError(f"a pre-hook must return None or (args, kwargs), got {changed!r}")
    raise HookError(hook_of(call), point, problem) from problem


# The sync runners inline the loop (no generator, no helper call per hook):
# they are the cost of every hooked call.
def _run_pre(sets: tuple[_HookSet, ...], args: _Args, kwargs: _Kwargs) -> tuple[_Args, _Kwargs]:
    for hooks in sets:
        calls = hooks.pre._calls  # noqa: SLF001
        if not calls:
            continue
        try:
            for call in calls:
                changed = call(args, kwargs)
                if changed is not None and changed is not SKIP:
                    args, kwargs = _new_arguments(changed, call, hooks.pre.name)
        except HookError:
            raise
        except Exception as exc:
            raise HookError(hook_of(call), hooks.pre.name, exc) from exc
    return args, kwargs


def _run_post(sets: tuple[_HookSet, ...], result: Any, args: _Args, kwargs: _Kwargs) -> Any:
    for hooks in sets:
        calls = hooks.post._calls  # noqa: SLF001
        if not calls:
            continue
        try:
            for call in calls:
                replaced = call(result, args, kwargs)
                if replaced is not None and replaced is not SKIP:
                    result = replaced
        except HookError:
            raise
        except Exception as exc:
            raise HookError(hook_of(call), hooks.post.name, exc) from exc
    return result


def _run_error(sets: tuple[_HookSet, ...], error: Exception, args: _Args, kwargs: _Kwargs) -> Any:
    """The first non-None error-hook result, or SKIP when every hook returned None."""
    for hooks in sets:
        calls = hooks.error._calls  # noqa: SLF001
        if not calls:
            continue
        try:
            for call in calls:
                fallback = call(error, args, kwargs)
                if fallback is not None and fallback is not SKIP:
                    return fallback
        except HookError:
            raise
        except Exception as exc:
            raise HookError(hook_of(call), hooks.error.name, exc) from exc
    return SKIP


async def _run_pre_async(sets: tuple[_HookSet, ...], args: _Args, kwargs: _Kwargs) -> tuple[_Args, _Kwargs]:
    for call, point in _each(sets, "pre"):
        changed = await _call_async(call, point, args, kwargs)
        if changed is not None and changed is not SKIP:
            args, kwargs = _new_arguments(changed, call, point)
    return args, kwargs


async def _run_post_async(sets: tuple[_HookSet, ...], result: Any, args: _Args, kwargs: _Kwargs) -> Any:
    for call, point in _each(sets, "post"):
        replaced = await _call_async(call, point, result, args, kwargs)
        if replaced is not None and replaced is not SKIP:
            result = replaced
    return result


async def _run_error_async(sets: tuple[_HookSet, ...], error: Exception, args: _Args,
                           kwargs: _Kwargs) -> Any:
    for call, point in _each(sets, "error"):
        fallback = await _call_async(call, point, error, args, kwargs)
        if fallback is not None and fallback is not SKIP:
            return fallback
    return SKIP


class _Registrars:
    """``pre`` / ``post`` / ``on_error`` methods shared by functions and bound methods."""

    def _hook_set(self) -> _HookSet:  # pragma: no cover - overridden
        raise NotImplementedError  # abstract

    def pre(self, hook: Callable[..., Any] | None = None, *, priority: PriorityLike = "NORMAL",
            once: bool = False, every: int = 1, when: Callable[..., Any] | None = None) -> Any:
        """Run ``hook(args, kwargs)`` before the call; it returns None or ``(args, kwargs)``."""
        hooks = self._hook_set()
        options = dict(priority=priority, once=once, every=every, when=when)
        return _register(hooks.pre, hook, options, hooks.is_async)

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
        self._count = 0  # hooks registered, class and live instances together
        self._class_hooks = _HookSet(getattr(fn, "__qualname__", repr(fn)), self._adjust, self._is_async)
        self._instance_hooks: InstanceTable[_HookSet] = InstanceTable(
            lambda obj: _HookSet(f"{type(obj).__qualname__}.{fn.__name__}[instance]", self._adjust,
                                 self._is_async),
            on_drop=_HookSet.detach,
        )
        self._dispatch = self._make_dispatch()

    def _hook_set(self) -> _HookSet:
        return self._class_hooks

    def _adjust(self, delta: int) -> None:
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
        return cast(_Dispatch, dispatch)

    def _call_hooked(self, args: _Args, kwargs: _Kwargs) -> Any:
        sets: tuple[_HookSet, ...] = (self._class_hooks,)
        if self._instance_hooks and args:  # a method: add the instance's own hooks
            instance = self._instance_hooks.get(args[0])
            if instance is not None:
                sets = (self._class_hooks, instance)
        return self._invoke(sets, args, kwargs)

    def _invoke(self, sets: tuple[_HookSet, ...], args: _Args, kwargs: _Kwargs) -> Any:
        if self._is_async:
            return self._invoke_async(sets, args, kwargs)
        args, kwargs = _run_pre(sets, args, kwargs)
        try:
            result = self.__wrapped__(*args, **kwargs)
        except Exception as exc:
            fallback = _run_error(sets, exc, args, kwargs)
            if fallback is SKIP:
                raise
            return fallback
        return _run_post(sets, result, args, kwargs)

    async def _invoke_async(self, sets: tuple[_HookSet, ...], args: _Args, kwargs: _Kwargs) -> Any:
        args, kwargs = await _run_pre_async(sets, args, kwargs)
        try:
            result = await self.__wrapped__(*args, **kwargs)
        except Exception as exc:
            fallback = await _run_error_async(sets, exc, args, kwargs)
            if fallback is SKIP:
                raise
            return fallback
        return await _run_post_async(sets, result, args, kwargs)

    # -- methods ------------------------------------------------------------------
    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        return BoundHookable(self._dispatch, obj)

    def __repr__(self) -> str:
        return f"<hookable {self.__qualname__}>"

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

    def _hook_set(self) -> _HookSet:
        return self._owner()._instance_hooks.setdefault(self.args[0])  # noqa: SLF001 - its bound view

    @property
    def __wrapped__(self) -> Callable[..., Any]:
        method: Callable[..., Any] = self._owner().__wrapped__.__get__(self.args[0])
        return method

    @property
    def __self__(self) -> Any:
        return self.args[0]

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
