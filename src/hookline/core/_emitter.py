"""Generated emitters: the function ``Event.emit`` is, rebuilt whenever the hook list changes.

A generic ``for call in calls: call(*args, **kwargs)`` pays, per hook, for
unpacking the argument tuple (``CALL_FUNCTION_EX``), for a call site that
sees a different function every time (no specialisation), and for the
``append`` of each result. The emitter of an event with ``n`` hooks is
instead unrolled code, like the ``__init__`` that :mod:`dataclasses`
generates: one line per hook and per positional arity 0 to 3, each calling a
closure variable ``c0``, ``c1``... with the arguments as plain names::

    results = [
        c0(a0),
        c1(a0),
    ]

Its source depends only on ``n``, so it is compiled once per size and
cached; a new hook list only calls the cached factory (a closure is made, no
code is compiled). Calls with keyword arguments or more than three
positional ones, and lists longer than :data:`MAX_UNROLLED`, take the
generic loop over the published call list.

**A kept emitter** (``emit = event.emit``, or ``event.emit`` passed as a
callback) stays right: once its hook list is replaced it forwards each call
to the event's current emitter. **Removal during an emission** stays exact: the closure cells ``c0``... are
published with the call list (``_Calls.cells``), and a removal blanks the
hook in both (one atomic store each), so an emission in flight does not call
it later. **Errors** cost nothing until one happens: the failing hook is
found from the line the exception passed through (one line per hook).

Example::

    >>> from hookline.core._emitter import emitter_source
    >>> [line.strip() for line in emitter_source(2).splitlines() if "(a0)" in line]
    ['c0(a0),', 'c1(a0),']
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .errors import ConfigError, HookError

#: the longest hook list that gets unrolled code; longer ones walk the list
MAX_UNROLLED = 128
#: the marker of a positional argument not given (an emitter's parameter default)
class _NoArgument:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<no argument>"


_NO: Any = _NoArgument()


class Emitter(Protocol):
    """What ``Event.emit`` is: call the hooks, return the results of those that ran."""

    def __call__(self, *args: Any, **kwargs: Any) -> list[Any]: ...


class CallList(Protocol):
    """The published call list an emitter walks (``event._Calls``)."""

    may_skip: bool
    stale: bool  # a newer list (and emitter) has been published

    def __iter__(self) -> Any: ...

    def __len__(self) -> int: ...


Failure = Callable[[BaseException, int], HookError]
Generic = Callable[[tuple[Any, ...], dict[str, Any]], list[Any]]

_factories: dict[int, tuple[Callable[..., Emitter], dict[int, int]]] = {}
_factories_lock = threading.Lock()


def emitter_source(n: int) -> str:
    """The source of the factory for ``n`` hooks (``make(calls, generic, failure, SKIP, NO, c0, ...)``).

    The emitter takes up to three positional arguments as parameters that
    default to the marker ``NO`` (bound in C, no tuple to unpack); anything
    else lands in ``rest`` / ``kwargs`` and goes to ``generic``, as does a
    call of an emitter that is no longer the event's (``calls.stale``: someone
    kept ``event.emit``), which ``generic`` forwards to the current one.
    """
    hooks = [f"c{i}" for i in range(n)]
    lines = [
        f"def make(calls, generic, failure, SKIP, NO, {', '.join(hooks)}):",
        "    def emit(a0=NO, a1=NO, a2=NO, /, *rest, **kwargs):",
        "        if rest or kwargs or calls.stale:",
        "            return generic(tuple(a for a in (a0, a1, a2) if a is not NO) + rest, kwargs)",
        "        try:",
    ]
    # (the lines that open a branch, and the indent of its body) for arities 0 to 3
    branches = [(["            if a1 is NO:", "                if a0 is NO:"], 20),
                (["                else:"], 20),
                (["            elif a2 is NO:"], 16),
                (["            else:"], 16)]
    for arity, (opening, indent) in enumerate(branches):
        params = ", ".join(f"a{j}" for j in range(arity))
        lines += opening
        lines.append(" " * indent + "results = [")
        lines += [" " * (indent + 4) + f"{hook}({params})," for hook in hooks]
        lines.append(" " * indent + "]")
    lines += [
        "        except HookError:",
        "            raise",
        "        except Exception as exc:",
        "            raise failure(exc, exc.__traceback__.tb_lineno) from exc",
        "        if calls.may_skip:",
        "            return [r for r in results if r is not SKIP]",
        "        return results",
        "    return emit",
    ]
    return "\n".join(lines) + "\n"


def _factory(n: int) -> tuple[Callable[..., Emitter], dict[int, int]]:
    """The compiled factory for ``n`` hooks and its line -> hook index table (cached)."""
    found = _factories.get(n)
    if found is not None:
        return found
    source = emitter_source(n)
    namespace: dict[str, Any] = {"HookError": HookError}
    exec(compile(source, f"<hookline emitter for {n} hooks>", "exec"), namespace)
    lines = {number: int(text.strip()[1:text.strip().index("(")])
             for number, text in enumerate(source.splitlines(), start=1)
             if text.strip().startswith("c") and text.endswith("),")}
    with _factories_lock:
        return _factories.setdefault(n, (namespace["make"], lines))


def build_emitter(calls: CallList, hooks: Sequence[Callable[..., Any]], generic: Generic,
                  fail: Callable[[BaseException, int], HookError],
                  skip: Any) -> tuple[Emitter, tuple[Any, ...]]:
    """The emitter for ``hooks`` (what ``calls`` holds) and the closure cells that hold them.

    ``generic(args, kwargs)`` handles what is not unrolled; ``fail(exc, index)``
    builds the :class:`HookError` for the hook at ``index``. Blanking a hook
    means storing into ``calls[index]`` and ``cells[index].cell_contents``.
    """
    n = len(hooks)
    if n == 0:
        return _silent(calls, generic), ()
    if n > MAX_UNROLLED:
        return _looping(generic), ()
    make, lines = _factory(n)

    def failure(exc: BaseException, lineno: int) -> HookError:
        return fail(exc, lines.get(lineno, -1))

    emit = make(calls, generic, failure, skip, _NO, *hooks)
    function: Any = emit  # a plain function: its closure cells hold the hooks
    cells = dict(zip(function.__code__.co_freevars, function.__closure__))
    return emit, tuple(cells[f"c{i}"] for i in range(n))


def _silent(calls: CallList, generic: Generic) -> Emitter:
    """The emitter of an event without hooks."""
    def emit(*args: Any, **kwargs: Any) -> list[Any]:
        if calls.stale:
            return generic(args, kwargs)
        return []
    return emit


def _looping(generic: Generic) -> Emitter:
    def emit(*args: Any, **kwargs: Any) -> list[Any]:
        return generic(args, kwargs)
    return emit


def refusing(calls: CallList, generic: Generic, name: str) -> Emitter:
    """The emitter of an event with coroutine hooks: ``emit`` refuses, ``emit_async`` works."""
    def emit(*args: Any, **kwargs: Any) -> list[Any]:
        if calls.stale:  # kept from before: the event may have no coroutine hooks now
            return generic(args, kwargs)
        raise ConfigError(f"event {name!r} has coroutine hooks; use 'await emit_async()'")
    return emit
