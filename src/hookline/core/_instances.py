"""Per-instance hook storage that keeps no instance alive and adds nothing to it."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .errors import ConfigError

V = TypeVar("V")


class InstanceTable(Generic[V]):
    """Maps live objects (by identity) to a value built on first use.

    Entries vanish when their object is garbage-collected; copies of an object
    (``copy.deepcopy``, pickling) do not inherit them. ``get`` takes no lock;
    ``setdefault`` does, so threads hooking one object at once share one value.
    """

    def __init__(self, factory: Callable[[Any], V],
                 on_drop: Callable[[V], Any] | None = None) -> None:
        self._factory = factory
        self._on_drop = on_drop
        self._items: dict[int, tuple[weakref.ref[Any], V]] = {}
        self._lock = threading.RLock()

    def get(self, obj: Any) -> V | None:
        """The value for ``obj``, or None."""
        item = self._items.get(id(obj))
        return item[1] if item is not None else None

    def setdefault(self, obj: Any) -> V:
        """The value for ``obj``, created if missing."""
        key = id(obj)
        item = self._items.get(key)
        if item is not None:
            return item[1]
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                return item[1]
            return self._create(obj, key)

    def _create(self, obj: Any, key: int) -> V:
        items = self._items
        on_drop = self._on_drop

        def drop(_ref: weakref.ref[Any], key: int = key) -> None:
            item = items.pop(key, None)
            if item is not None and on_drop is not None:
                on_drop(item[1])

        try:
            ref = weakref.ref(obj, drop)
        except TypeError:
            raise ConfigError(
                f"cannot hook a single {type(obj).__name__} instance: it does not support "
                "weak references (add '__weakref__' to its __slots__), or register on the class"
            ) from None
        value = self._factory(obj)
        items[key] = (ref, value)
        return value

    def __bool__(self) -> bool:
        return bool(self._items)
