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
``obj.method.post(h)`` only ``obj``; class hooks run first. Through a
subclass that inherits the method, ``Sub.method.post(h)`` hooks the instances
of ``Sub`` (and its subclasses) only, as ``observe(Sub, ...)`` does.
``@hookable`` above ``@staticmethod`` keeps the method static; a
``@classmethod`` goes above ``@hookable``, and its hooks are the function's
(they run for every class it is called through).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, cast, overload

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
from ._registrars import _Registrars, _Target
from .around import Chain
from .errors import ConfigError, qualified_name
from .event import SKIP

_P = ParamSpec("_P")
_R = TypeVar("_R")
_P2 = ParamSpec("_P2")
_R2 = TypeVar("_R2")
_S = TypeVar("_S")


class _Forwarded(str):
    """A class attribute of a bound view (``__doc__``, ``__module__``): this str on the class,
    the hookable function's attribute on an instance. A str, because ``type`` hands out a
    class's ``__module__`` without calling ``__get__``."""

    attribute: str

    def __new__(cls, value: str, attribute: str) -> _Forwarded:
        self = super().__new__(cls, value)
        self.attribute = attribute
        return self

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return str(self)
        return getattr(obj._owner(), self.attribute)  # noqa: SLF001 - the view's function


def _instances_of(cls: type) -> Callable[..., bool]:
    """A gate letting through the calls whose ``args[0]`` is an instance of ``cls`` (every hook
    kind gets ``args`` second to last)."""
    return lambda *hook_args: bool(hook_args[-2]) and isinstance(hook_args[-2][0], cls)


def _via_classmethod(function: HookableFunction[..., Any], cls: Any) -> bool:
    """Whether ``function`` bound to ``cls`` came through a ``classmethod`` of ``cls``."""
    return isinstance(cls, type) and any(
        isinstance(attr, classmethod) and attr.__func__ is function
        for klass in cls.__mro__ for attr in vars(klass).values())


class _Dispatch(Protocol):
    """``HookableFunction``'s dispatch function, which knows its owner."""

    __hookline_owner__: HookableFunction[..., Any]

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class HookableFunction(_Registrars, Generic[_P, _R]):
    """The object ``@hookable`` returns. Call it like the original.

    Generic in the function's parameters ``P`` and result ``R``: type checkers see
    ``@hookable def f(a: int) -> str`` as ``HookableFunction[[a: int], str]``, called as ``f``
    is (and on an instance, a :class:`BoundHookable` without the ``self`` parameter).
    """

    # copied from the original by functools.update_wrapper
    __wrapped__: Callable[_P, _R]
    __name__: str
    __qualname__: str

    def __init__(self, fn: Callable[_P, _R]) -> None:
        _check_hookable(fn)
        functools.update_wrapper(self, fn)
        self._home: type | None = None  # the class it is defined in (__set_name__)
        self._is_async = is_coroutine_callable(fn)
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

    def _target(self) -> _Target:
        return _Target(self._class_hooks)

    def __set_name__(self, owner: type, name: str) -> None:
        if self._home is None:
            self._home = owner

    def _adjust(self, delta: int, around_delta: int = 0) -> None:
        # called with self._lock held (by HookSet); calls read _hooked and _arounds without a lock
        self._arounds += around_delta
        self._count += delta
        self._hooked = self._count > 0

    # -- calling ------------------------------------------------------------------
    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
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

    def _call_hooked(self, args: Args, kwargs: Kwargs) -> _R:
        sets: tuple[HookSet, ...] = (self._class_hooks,)
        if self._instance_hooks and args:  # a method: add the instance's own hooks
            instance = self._instance_hooks.get(args[0])
            if instance is not None:
                sets = (self._class_hooks, instance)
        result: _R = self._invoke(sets, args, kwargs)  # what the hooks made of the call's result
        return result

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
        function: Callable[..., Any] = self.__wrapped__  # a coroutine function
        try:
            if chain is None:
                result = await function(*args, **kwargs)
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
    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> HookableFunction[_P, _R]: ...

    @overload
    def __get__(self: HookableFunction[Concatenate[_S, _P2], _R2], obj: _S,
                objtype: type | None = None) -> BoundHookable[_P2, _R2]: ...

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            if objtype is self._home or self._home is None or objtype is None:
                return self
            return SubclassHookable(self, objtype)  # hooks through it: that subclass only
        return BoundHookable(self._dispatch, obj)

    def __repr__(self) -> str:
        return f"<hookable {qualified_name(self.__wrapped__)}>"  # a partial has no __qualname__

    def __reduce__(self) -> str:
        # Pickled by reference, like a function: the name in its module.
        return self.__qualname__


class BoundHookable(functools.partial[Any], _Registrars, Generic[_P, _R]):
    """``obj.method`` for a hookable method: calls it, and hooks only ``obj``.

    A C-level ``functools.partial`` (created per attribute access, like a
    bound method, and never stored on the instance, so pickling and copying
    are unaffected). Generic in the method's parameters after ``self`` and its result.
    """

    __slots__ = ()
    func: _Dispatch  # always HookableFunction._dispatch
    __doc__ = _Forwarded(__doc__ or "", "__doc__")
    __module__ = _Forwarded(__module__, "__module__")

    if TYPE_CHECKING:  # the C-level partial's call, with the method's signature
        def __call__(self, /, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...

    def _owner(self) -> HookableFunction[..., Any]:
        return self.func.__hookline_owner__

    def _target(self) -> _Target:
        owner = self._owner()
        if _via_classmethod(owner, self.args[0]):  # @classmethod above @hookable: the function's
            return _Target(owner._class_hooks)  # noqa: SLF001 - its bound view
        return _Target(owner._instance_hooks.setdefault(self.args[0]))  # noqa: SLF001

    def __getattr__(self, name: str) -> Any:
        if name in ("__name__", "__qualname__"):  # the method's, as a bound method has them
            return getattr(self._owner(), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

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


class SubclassHookable(_Registrars, Generic[_P, _R]):
    """``Sub.method`` for a hookable method that ``Sub`` inherits: calls it, and the hooks
    registered through it run only for instances of ``Sub`` and its subclasses."""

    __slots__ = ("function", "cls")
    __doc__ = _Forwarded(__doc__ or "", "__doc__")
    __module__ = _Forwarded(__module__, "__module__")

    def __init__(self, function: HookableFunction[_P, _R], cls: type) -> None:
        self.function = function
        self.cls = cls

    def _owner(self) -> HookableFunction[_P, _R]:
        return self.function

    def _target(self) -> _Target:
        label = f"{self.cls.__qualname__}.{self.function.__name__}"
        return _Target(self.function._class_hooks, _instances_of(self.cls), label)  # noqa: SLF001

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return self.function(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name in ("function", "cls"):  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.function, name)  # __wrapped__, __name__, __qualname__ ...

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SubclassHookable):
            return NotImplemented
        return self.function is other.function and self.cls is other.cls

    def __hash__(self) -> int:
        return hash((id(self.function), id(self.cls)))

    def __repr__(self) -> str:
        return f"<hookable {qualified_name(self.function.__wrapped__)} through {self.cls.__qualname__}>"

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, str]]:
        return getattr, (self.cls, self.function.__name__)


def _check_hookable(fn: Any) -> None:
    """A :class:`ConfigError` for what ``@hookable`` cannot wrap, with the decorator order."""
    if isinstance(fn, classmethod):
        raise ConfigError("@hookable cannot wrap a classmethod object: put @classmethod above "
                          "@hookable (@classmethod, then @hookable, then def ...)")
    if isinstance(fn, staticmethod):
        raise ConfigError("HookableFunction cannot wrap a staticmethod object: use @hookable "
                          "(which keeps it static), or put @staticmethod above @hookable")
    if not callable(fn):
        raise ConfigError(f"@hookable needs a function or method, got {ConfigError.brief(fn)}")


if TYPE_CHECKING:
    class _StaticHookable(Generic[_P, _R]):
        """For type checkers only: ``@hookable`` above ``@staticmethod``, a staticmethod whose
        attribute is the hookable function (on the class and on an instance)."""

        def __get__(self, obj: object, objtype: type | None = None) -> HookableFunction[_P, _R]: ...


@overload
def hookable(fn: staticmethod[_P, _R]) -> _StaticHookable[_P, _R]: ...  # type: ignore[overload-overlap]


@overload
def hookable(fn: Callable[_P, _R]) -> HookableFunction[_P, _R]: ...


def hookable(fn: Any) -> Any:
    """Make ``fn`` (a function or method, sync or async) accept pre/post/error hooks.

    With no hooks registered, a call costs a fraction of a microsecond more
    than calling ``fn`` directly. Above ``@staticmethod`` it returns a
    staticmethod of the hookable function (the method stays static).
    """
    if isinstance(fn, staticmethod):
        return staticmethod(HookableFunction(fn.__func__))
    return HookableFunction(fn)
