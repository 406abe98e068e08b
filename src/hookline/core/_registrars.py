"""What ``pre`` / ``around`` / ``post`` / ``on_error`` share on a hookable function, a bound
method and a subclass's view: where a hook goes (:class:`_Target`) and the checks it passes.

Example::

    >>> from hookline.core import hookable
    >>> @hookable
    ... def double(x):
    ...     return 2 * x
    >>> handle = double.post(lambda result, args, kwargs: result + 1)  # a _Registrars method
    >>> double(3)
    7
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

from ._callables import check_shape, is_coroutine_callable
from ._hookset import HookSet
from .errors import ConfigError, qualified_name
from .event import DECORATE, Event
from .handles import HookHandle, hook_behind
from .priority import PriorityLike

if TYPE_CHECKING:
    from .handles import TypedHookHandle

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: per kind of hook: how many arguments it is called with, and the signature to show
_SHAPES = {"pre": (2, "hook(args, kwargs)"), "around": (3, "hook(call, args, kwargs)"),
           "post": (3, "hook(result, args, kwargs)"), "error": (3, "hook(exc, args, kwargs)")}


class _Target:
    """Where a registrar puts a hook: a hook set, with the gate and the label of a subclass
    (``Sub.method.post(h)`` runs ``h`` for instances of ``Sub`` only)."""

    __slots__ = ("hooks", "gate", "label")

    def __init__(self, hooks: HookSet, gate: Callable[..., bool] | None = None,
                 label: str | None = None) -> None:
        self.hooks, self.gate, self.label = hooks, gate, label


def _check_hook(event: Event, kind: str, hook: Any, when: Any) -> None:
    """A :class:`ConfigError` for a hook (or ``when``) that cannot take a call's arguments."""
    count, expected = _SHAPES[kind]
    check_shape(hook, count, f"{event.name} hook", expected)
    if callable(when):
        check_shape(when, count, f"when-predicate of {event.name}",
                    expected.replace("hook(", "when(", 1))


def _register(event: Event, kind: str, hook: Any, options: dict[str, Any], target: _Target) -> Any:
    if hook is DECORATE:
        return lambda fn: _register(event, kind, fn, options, target)
    hook = hook_behind(hook)
    if not target.hooks.is_async and is_coroutine_callable(hook):
        raise ConfigError(
            f"{qualified_name(hook)} is a coroutine function; it can only hook an async "
            f"function, and {event.name.rsplit('.', 1)[0]} is not async"
        )
    _check_hook(event, kind, hook, options["when"])
    handle: HookHandle = event.register(hook, **options, _gate=target.gate)
    if target.label is not None:  # a subclass's hook: its handle names the subclass
        handle.point = f"{target.label}.{event.name.rsplit('.', 1)[1]}"
    return handle


class _Registrars:
    """``pre`` / ``around`` / ``post`` / ``on_error`` methods shared by functions and bound methods."""

    def _target(self) -> _Target:  # pragma: no cover - overridden
        raise NotImplementedError  # abstract

    def _add(self, kind: str, hook: Any, options: dict[str, Any]) -> Any:
        target = self._target()
        return _register(getattr(target.hooks, kind), kind, hook, options, target)

    @overload
    def pre(self, *, priority: PriorityLike = ..., once: bool = ..., every: int = ...,
            when: Callable[..., Any] | None = ...
            ) -> Callable[[Callable[_P, _R]], TypedHookHandle[_P, _R]]: ...

    @overload
    def pre(self, hook: Callable[_P, _R], *, priority: PriorityLike = ..., once: bool = ...,
            every: int = ..., when: Callable[..., Any] | None = ...) -> TypedHookHandle[_P, _R]: ...

    def pre(self, hook: Callable[..., Any] = DECORATE, *, priority: PriorityLike = "NORMAL",
            once: bool = False, every: int = 1, when: Callable[..., Any] | None = None) -> Any:
        """Run ``hook(args, kwargs)`` before the call; it returns None (keep the arguments),
        ``(args, kwargs)`` (new ones) or ``Skip(value)`` (skip the call: ``value`` is its result).
        Returns a :class:`HookHandle` (without ``hook``: a decorator)."""
        return self._add("pre", hook, dict(priority=priority, once=once, every=every, when=when))

    @overload
    def around(self, *, priority: PriorityLike = ..., once: bool = ..., every: int = ...,
               when: Callable[..., Any] | None = ...
               ) -> Callable[[Callable[_P, _R]], TypedHookHandle[_P, _R]]: ...

    @overload
    def around(self, hook: Callable[_P, _R], *, priority: PriorityLike = ..., once: bool = ...,
               every: int = ..., when: Callable[..., Any] | None = ...) -> TypedHookHandle[_P, _R]: ...

    def around(self, hook: Callable[..., Any] = DECORATE, *, priority: PriorityLike = "NORMAL",
               once: bool = False, every: int = 1, when: Callable[..., Any] | None = None) -> Any:
        """Run ``hook(call, args, kwargs)`` instead of the call; it calls ``call(*args, **kwargs)``
        (the inner wrappers, then the function) as it likes and returns the result."""
        return self._add("around", hook, dict(priority=priority, once=once, every=every, when=when))

    @overload
    def post(self, *, priority: PriorityLike = ..., once: bool = ..., every: int = ...,
             when: Callable[..., Any] | None = ...
             ) -> Callable[[Callable[_P, _R]], TypedHookHandle[_P, _R]]: ...

    @overload
    def post(self, hook: Callable[_P, _R], *, priority: PriorityLike = ..., once: bool = ...,
             every: int = ..., when: Callable[..., Any] | None = ...) -> TypedHookHandle[_P, _R]: ...

    def post(self, hook: Callable[..., Any] = DECORATE, *, priority: PriorityLike = "NORMAL",
             once: bool = False, every: int = 1, when: Callable[..., Any] | None = None) -> Any:
        """Run ``hook(result, args, kwargs)`` after the call; a non-None return replaces the result."""
        return self._add("post", hook, dict(priority=priority, once=once, every=every, when=when))

    @overload
    def on_error(self, *, priority: PriorityLike = ..., once: bool = ..., every: int = ...,
                 when: Callable[..., Any] | None = ...
                 ) -> Callable[[Callable[_P, _R]], TypedHookHandle[_P, _R]]: ...

    @overload
    def on_error(self, hook: Callable[_P, _R], *, priority: PriorityLike = ..., once: bool = ...,
                 every: int = ..., when: Callable[..., Any] | None = ...) -> TypedHookHandle[_P, _R]: ...

    def on_error(self, hook: Callable[..., Any] = DECORATE, *, priority: PriorityLike = "NORMAL",
                 once: bool = False, every: int = 1, when: Callable[..., Any] | None = None) -> Any:
        """Run ``hook(exc, args, kwargs)`` when the call raises; a non-None return is the result."""
        return self._add("error", hook, dict(priority=priority, once=once, every=every, when=when))
