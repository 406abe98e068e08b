"""The hook lists of one hookable function, and the runners a hooked call goes through.

A call meets its hooks in this order: pre-hooks (which may replace the
arguments or return ``Skip``), around-hooks nested around the function, then
error hooks (if the function raised) or post-hooks. The runners read each
Event's published call list (``Event._calls``) directly and take no lock: the
sync ones are the cost of every hooked call.

Example::

    >>> import threading
    >>> from hookline.core._hookset import HookSet, run_post
    >>> hooks = HookSet("f", adjust=lambda *deltas: None, is_async=False, lock=threading.RLock())
    >>> _ = hooks.post.register(lambda result, args, kwargs: result + 1)
    >>> run_post((hooks,), 1, (), {})
    2
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .around import Skip, Wrapper
from .errors import HookError
from .event import SKIP, Event, hook_of

# a hooked call's positional and keyword arguments
Args = tuple[Any, ...]
Kwargs = dict[str, Any]


class HookSet:
    """The pre, around, post and error hook lists of one function (or one instance).

    ``adjust(delta, around_delta)`` tells the owning :class:`HookableFunction`
    how many hooks, and how many of them around-hooks, were added (or
    removed), under the owner's ``lock``; ``is_async`` is whether that
    function is a coroutine function.
    """

    __slots__ = ("pre", "around", "post", "error", "count", "arounds", "is_async", "adjust", "lock")

    def __init__(self, name: str, adjust: Callable[[int, int], None], is_async: bool,
                 lock: threading.RLock) -> None:
        self.pre = Event(f"{name}.pre")
        self.around = Event(f"{name}.around")
        self.post = Event(f"{name}.post")
        self.error = Event(f"{name}.on_error")
        self.count = 0
        self.arounds = 0
        self.is_async = is_async
        self.adjust: Callable[[int, int], None] | None = adjust
        self.lock = lock
        for event in (self.pre, self.around, self.post, self.error):
            event.on_change = self._changed

    def _changed(self, _event: Event) -> None:
        # Recounted under the owner's lock: whichever thread comes last sees every change
        # made before it, so the owner's total never drifts.
        with self.lock:
            arounds = len(self.around)
            count = len(self.pre) + arounds + len(self.post) + len(self.error)
            if self.adjust is not None:
                self.adjust(count - self.count, arounds - self.arounds)
            self.count, self.arounds = count, arounds

    def detach(self) -> None:
        """The instance is gone: its hooks no longer count (even if removed later)."""
        with self.lock:
            if self.adjust is not None:
                self.adjust(-self.count, -self.arounds)
                self.adjust = None


# The hook runners read each Event's call list (``Event._calls``) directly: the
# sync ones are the cost of every hooked call.
def each(sets: tuple[HookSet, ...], kind: str) -> Iterator[tuple[Callable[..., Any], str]]:
    """Yield ``(call, point)`` for the hooks of one kind, class hooks first."""
    for hooks in sets:
        event: Event = getattr(hooks, kind)
        for call in event._calls:  # noqa: SLF001
            yield call, event.name


async def call_async(call: Callable[..., Any], point: str, *args: Any) -> Any:
    try:
        result = call(*args)
        return await result if inspect.isawaitable(result) else result
    except HookError:
        raise
    except Exception as exc:
        raise HookError(hook_of(call), point, exc) from exc


def new_arguments(changed: Any, call: Callable[..., Any], point: str) -> tuple[Args, Kwargs]:
    """Validate what a pre-hook returned other than None (keep), Skip: it must be ``(args, kwargs)``."""
    if (isinstance(changed, tuple) and len(changed) == 2
            and isinstance(changed[0], (tuple, list)) and isinstance(changed[1], dict)):
        return tuple(changed[0]), changed[1]
    problem = TypeError(f"a pre-hook must return None, Skip(value) or (args, kwargs), got {changed!r}")
    raise HookError(hook_of(call), point, problem) from problem


def wrappers_of(sets: tuple[HookSet, ...]) -> list[Wrapper]:
    """The around-hooks of a call, outermost first (class hooks outside instance hooks)."""
    found: list[Wrapper] = []
    for hooks in sets:
        calls = hooks.around._calls  # noqa: SLF001
        if calls:
            found += [(calls, position, hooks.around.name) for position in range(len(calls))]
    return found


# The sync runners inline the loop (no generator, no helper call per hook):
# they are the cost of every hooked call.
def run_pre(sets: tuple[HookSet, ...], args: Args,
             kwargs: Kwargs) -> tuple[Args, Kwargs, Skip | None]:
    """The arguments after the pre-hooks, and the ``Skip`` one of them returned (or None)."""
    for hooks in sets:
        calls = hooks.pre._calls  # noqa: SLF001
        if not calls:
            continue
        try:
            for call in calls:
                changed = call(args, kwargs)
                if changed is not None and changed is not SKIP:
                    if isinstance(changed, Skip):
                        return args, kwargs, changed
                    args, kwargs = new_arguments(changed, call, hooks.pre.name)
        except HookError:
            raise
        except Exception as exc:
            raise HookError(hook_of(call), hooks.pre.name, exc) from exc
    return args, kwargs, None


def run_post(sets: tuple[HookSet, ...], result: Any, args: Args, kwargs: Kwargs) -> Any:
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


def run_error(sets: tuple[HookSet, ...], error: Exception, args: Args, kwargs: Kwargs) -> Any:
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


async def run_pre_async(sets: tuple[HookSet, ...], args: Args,
                         kwargs: Kwargs) -> tuple[Args, Kwargs, Skip | None]:
    for call, point in each(sets, "pre"):
        changed = await call_async(call, point, args, kwargs)
        if changed is not None and changed is not SKIP:
            if isinstance(changed, Skip):
                return args, kwargs, changed
            args, kwargs = new_arguments(changed, call, point)
    return args, kwargs, None


async def run_post_async(sets: tuple[HookSet, ...], result: Any, args: Args, kwargs: Kwargs) -> Any:
    for call, point in each(sets, "post"):
        replaced = await call_async(call, point, result, args, kwargs)
        if replaced is not None and replaced is not SKIP:
            result = replaced
    return result


async def run_error_async(sets: tuple[HookSet, ...], error: Exception, args: Args,
                           kwargs: Kwargs) -> Any:
    for call, point in each(sets, "error"):
        fallback = await call_async(call, point, error, args, kwargs)
        if fallback is not None and fallback is not SKIP:
            return fallback
    return SKIP
