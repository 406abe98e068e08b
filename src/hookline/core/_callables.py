"""Whether a hook is a coroutine function, however it is wrapped.

``inspect.iscoroutinefunction`` sees a plain ``async def`` only: not an
``@hookable async def``, a :class:`~hookline.core.HookHandle` standing for
one (the decorator forms return handles), a ``functools.partial`` of one, or
an object whose ``__call__`` is ``async def``. Registration asks this instead,
so each of them is refused where a plain function cannot take coroutine hooks.

Example::

    >>> import functools
    >>> async def store(x): ...
    >>> is_coroutine_callable(functools.partial(store, 1)), is_coroutine_callable(len)
    (True, False)
"""

from __future__ import annotations

import functools
import inspect
from typing import Any


def is_coroutine_callable(obj: Any) -> bool:
    """True when calling ``obj`` gives a coroutine (see the module docstring)."""
    for _ in range(16):  # wrappers of wrappers, but never a cycle
        if inspect.iscoroutinefunction(obj):
            return True
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif hasattr(obj, "__wrapped__"):  # @hookable, functools.wraps
            obj = obj.__wrapped__
        elif callable(getattr(obj, "remove", None)) and hasattr(obj, "hook") \
                and getattr(obj, "hook", None) is not None:  # a HookHandle: its hook
            obj = obj.hook
        elif not inspect.isroutine(obj) and not isinstance(obj, type) and callable(obj):
            return inspect.iscoroutinefunction(type(obj).__call__)
        else:
            return False
    return False
