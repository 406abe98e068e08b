"""Around-hooks and ``Skip``: the two ways a hook decides whether, and how, the call runs.

An **around-hook** (``f.around(wrapper)``) is called as ``wrapper(call, args,
kwargs)``: it runs code before and after ``call(*args, **kwargs)`` (the rest
of the chain: inner wrappers, then the function) and returns the result. It
may call it with other arguments, more than once (a retry), or not at all (a
cache). Several wrappers nest by priority: the first is the outermost.

A **pre-hook** may return ``Skip(value)``: the call, the around-hooks and the
remaining pre-hooks are skipped, and ``value`` is the result (post-hooks still
run on it).

Example (a timer and a cache on one function)::

    >>> import time
    >>> from hookline.core import Skip, hookable
    >>> @hookable
    ... def square(x):
    ...     return x * x
    >>> timings, cache = [], {3: 9}
    >>> @square.around
    ... def timed(call, args, kwargs):
    ...     start = time.perf_counter()
    ...     try:
    ...         return call(*args, **kwargs)
    ...     finally:
    ...         timings.append(time.perf_counter() - start)
    >>> _ = square.pre(lambda args, kwargs: Skip(cache[args[0]]) if args[0] in cache else None)
    >>> square(3), square(4), len(timings)      # 3 came from the cache: not timed
    (9, 16, 1)

Errors: an exception that comes out of ``call`` (the function's, or an inner
wrapper's) passes through a wrapper unchanged when the wrapper lets it
propagate or re-raises it; an exception the wrapper raises itself becomes a
:class:`~hookline.core.HookError` naming the wrapper and ``f.around``. Error
hooks see only the function's own exceptions.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .errors import HookError
from .event import SKIP, hook_of

#: ``(calls, position, point)``: an around-hook is ``calls[position]`` of its hook point's published
#: call list, read when its turn comes (a wrapper removed meanwhile has been blanked out there)
Wrapper = tuple[list[Callable[..., Any]], int, str]


class Skip:
    """Return ``Skip(value)`` from a pre-hook to skip the call; ``value`` becomes its result.

    The remaining pre-hooks, the around-hooks and the function do not run;
    post-hooks do, on ``value``.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Skip({self.value!r})"


class Chain:
    """The around-hooks of one hooked call, outermost first, with the function at the centre.

    ``failures`` collects the exceptions the function itself raised, so the
    caller can tell them (error hooks run) from a wrapper's (they do not).
    """

    __slots__ = ("wrappers", "fn", "failures")

    def __init__(self, wrappers: list[Wrapper], fn: Callable[..., Any]) -> None:
        self.wrappers = wrappers
        self.fn = fn
        self.failures: list[BaseException] = []

    def raised_by_function(self, exc: BaseException) -> bool:
        """Whether ``exc`` is one the function raised (possibly passed on by the wrappers)."""
        return any(exc is failure for failure in self.failures)

    # -- sync ---------------------------------------------------------------------------------
    def run(self, index: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call wrapper ``index`` around the rest of the chain (the function when none is left)."""
        if index == len(self.wrappers):
            try:
                return self.fn(*args, **kwargs)
            except BaseException as exc:
                self.failures.append(exc)
                raise
        calls, position, point = self.wrappers[index]
        wrapper = calls[position]
        passed: list[BaseException] = []  # what came out of the inner chain

        def call(*inner_args: Any, **inner_kwargs: Any) -> Any:
            try:
                return self.run(index + 1, inner_args, inner_kwargs)
            except BaseException as exc:
                passed.append(exc)
                raise

        try:
            result = wrapper(call, args, kwargs)
        except HookError:
            raise
        except Exception as exc:
            if any(exc is inner for inner in passed):
                raise
            raise HookError(hook_of(wrapper), point, exc) from exc
        if result is SKIP:  # held back by once/every/when: the chain goes on without it
            return self.run(index + 1, args, kwargs)
        return result

    # -- async --------------------------------------------------------------------------------
    async def run_async(self, index: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Like :meth:`run` for a coroutine function: ``call(...)`` returns an awaitable."""
        if index == len(self.wrappers):
            try:
                return await self.fn(*args, **kwargs)
            except BaseException as exc:
                self.failures.append(exc)
                raise
        calls, position, point = self.wrappers[index]
        wrapper = calls[position]
        passed: list[BaseException] = []

        async def inner(inner_args: tuple[Any, ...], inner_kwargs: dict[str, Any]) -> Any:
            try:
                return await self.run_async(index + 1, inner_args, inner_kwargs)
            except BaseException as exc:
                passed.append(exc)
                raise

        def call(*inner_args: Any, **inner_kwargs: Any) -> Any:
            return inner(inner_args, inner_kwargs)

        try:
            result = wrapper(call, args, kwargs)
            if inspect.isawaitable(result):
                result = await result
        except HookError:
            raise
        except Exception as exc:
            if any(exc is inner_exc for inner_exc in passed):
                raise
            raise HookError(hook_of(wrapper), point, exc) from exc
        if result is SKIP:
            return await self.run_async(index + 1, args, kwargs)
        return result
