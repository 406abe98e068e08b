"""Removable handles: every registration returns one.

Example::

    >>> from hookline.core import Event, HandleGroup
    >>> ev = Event("tick")
    >>> with ev.register(print):          # removed on exit
    ...     ev.emit("hello")
    hello
    [None]
    >>> group = HandleGroup()
    >>> _ = group.add(ev.register(print)); _ = group.add(ev.register(repr))
    >>> group.remove(); len(ev)
    0
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")
_H = TypeVar("_H")


class HookHandle:
    """Removes one hook. ``remove()`` is idempotent; ``with handle:`` removes on exit.

    Thread-safe: when several threads call ``remove()`` at once, the remover
    runs exactly once.
    """

    __slots__ = ("_remover", "hook", "point")

    def __init__(self, remover: Callable[[], Any], hook: Any = None, point: str = "") -> None:
        # A one-item list: ``pop()`` hands the remover to exactly one caller (atomic).
        self._remover: list[Callable[[], Any]] = [remover]
        self.hook = hook
        self.point = point

    @property
    def removed(self) -> bool:
        """True once the hook has been removed (by this handle or by ``once=True``)."""
        return not self._remover

    def remove(self) -> None:
        """Remove the hook; a second call does nothing."""
        try:
            remover = self._remover.pop()
        except IndexError:
            return
        remover()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the hook itself, so a decorated function stays callable."""
        return self.hook(*args, **kwargs)

    @property
    def __wrapped__(self) -> Any:
        """The hook (as ``functools.wraps`` would say): ``inspect.signature(handle)`` is the
        hook's, and registering a handle registers its hook (stacked decorators)."""
        if self.hook is None:
            raise AttributeError("this handle stands for no hook")
        return self.hook

    def __enter__(self) -> HookHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "removed" if self.removed else "active"
        return f"<HookHandle {self.point or '?'} {state}>"


if TYPE_CHECKING:
    class TypedHookHandle(HookHandle, Generic[_P, _R]):
        """For type checkers only (no such class at run time): the :class:`HookHandle` a
        registration returns, called with its hook's signature (``@event.register`` leaves the
        handle on the decorated name, and it still calls the function)."""

        hook: Callable[_P, _R]

        def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...


class HandleGroup:
    """A set of handles removed together (also a context manager); thread-safe."""

    def __init__(self, handles: Iterable[Any] = ()) -> None:
        self._handles: list[Any] = list(handles)
        self._lock = threading.Lock()

    def add(self, handle: _H) -> _H:
        """Keep ``handle`` (anything with ``remove()``) and return it."""
        if not callable(getattr(handle, "remove", None)):
            raise TypeError(f"HandleGroup.add expects a handle with .remove(), got {handle!r}")
        with self._lock:
            self._handles.append(handle)
        return handle

    def remove(self) -> None:
        """Remove every handle, newest first; the group is empty afterwards. A ``remove()``
        that raises does not keep the others in place: all are tried, then the first error
        is raised."""
        with self._lock:
            handles, self._handles = self._handles, []
        error: BaseException | None = None
        for handle in reversed(handles):
            try:
                handle.remove()
            except BaseException as exc:  # re-raised below, after the rest
                error = error or exc
        if error is not None:
            raise error

    def __len__(self) -> int:
        return len(self._handles)

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._handles))

    def __enter__(self) -> HandleGroup:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


def hook_behind(fn: Any) -> Any:
    """``fn``, or the hook a :class:`HookHandle` stands for (what ``@ev.register`` left on a
    name): stacked decorators such as ``@ev.register @other.register def f`` register ``f``."""
    for _ in range(8):  # a handle of a handle ...
        if not isinstance(fn, HookHandle) or fn.hook is None:
            break
        fn = fn.hook
    return fn
