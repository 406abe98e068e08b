"""What kind of callable a hook is: a coroutine function (however wrapped), and whether it can
be called with the arguments its hook point passes.

``inspect.iscoroutinefunction`` sees a plain ``async def`` only: not an
``@hookable async def``, a :class:`~hookline.core.HookHandle` standing for
one (the decorator forms return handles), a ``functools.partial`` of one, or
an object whose ``__call__`` is ``async def``. :func:`is_coroutine_callable`
sees those too, and is the one test ``@hookable`` and every registration use.
It follows ``__wrapped__`` only through objects that are not plain functions
(a hookable function, a handle): a plain ``def`` wrapper made with
``functools.wraps`` around an ``async def`` (asgiref's ``async_to_sync``) is
what it is, a sync function.

Example::

    >>> import functools
    >>> async def store(x): ...
    >>> @functools.wraps(store)
    ... def blocking(x): ...
    >>> is_coroutine_callable(functools.partial(store, 1)), is_coroutine_callable(blocking)
    (True, False)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from .errors import ConfigError, qualified_name


def is_coroutine_callable(obj: Any) -> bool:
    """True when calling ``obj`` gives a coroutine (see the module docstring)."""
    for _ in range(16):  # wrappers of wrappers, but never a cycle
        if inspect.iscoroutinefunction(obj):
            return True
        if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj):
            return False  # a plain (sync) function or method, even one with __wrapped__
        if getattr(obj, "__wrapped__", None) is not None:  # @hookable (bound too), a HookHandle
            obj = obj.__wrapped__
        elif isinstance(obj, functools.partial):
            obj = obj.func
        elif isinstance(obj, type) or not callable(obj):
            return False
        else:
            return inspect.iscoroutinefunction(type(obj).__call__)
    return False


class _Placeholder:
    """An argument that stands for what a hook point will pass (for ``Signature.bind``)."""

    __slots__ = ()


def check_shape(fn: Callable[..., Any], count: int, role: str, expected: str) -> None:
    """A :class:`ConfigError` unless ``fn`` can be called with ``count`` positional arguments.

    ``role`` names what ``fn`` is (``"post-hook of save"``), ``expected`` the
    signature it needs (``"hook(result, args, kwargs)"``). A callable without a
    readable signature (a builtin) is not checked, and a wrapper is checked by
    its own signature, not the one its ``__wrapped__`` claims (``functools.wraps``
    may be applied to anything).
    """
    try:
        signature = inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*[_Placeholder()] * count)
    except TypeError:
        raise ConfigError(f"{role} {qualified_name(fn)} takes {signature} and cannot be called "
                          f"as {expected}; give it that signature") from None
