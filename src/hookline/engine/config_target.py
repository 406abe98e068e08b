"""The steps every check of a ``{"type": ...}`` config shares: the class it names, its
keywords against the class's signature, each value against the default of the same name,
then the class built on stand-ins, any failure one :class:`ConfigError` naming the key.
:mod:`~hookline.engine.torch_args` and :mod:`~hookline.engine.scheduler_args` check their
configs with them.

Example::

    >>> import torch
    >>> from hookline.engine.registries import OPTIMIZERS
    >>> resolve_type(OPTIMIZERS, {"type": "SGD", "lr": 0.1}, "optimizer", "") is torch.optim.SGD
    True
    >>> check_values(torch.optim.SGD, {"nesterov": "yes"}, "optimizer")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: optimizer.nesterov must be true or false (...), got 'yes'
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

import torch

from hookline.core import ConfigError, Registry
from hookline.core.registry import check_call

from .checks import is_number
from .mmengine_options import refuse_mmengine_options

__all__ = ["call_check", "check_values", "constructed", "resolve_type", "run_check_args",
           "signature_of", "type_label"]


def type_label(target: Any, kind: Any) -> str:
    """The name a message gives ``target`` (``kind``: the config's ``type`` when a string)."""
    return kind if isinstance(kind, str) else getattr(target, "__name__", repr(target))


def resolve_type(registry: Registry, spec: Mapping[str, Any], where: str, example: str) -> Any:
    """The class a ``{"type": ...}`` config names."""
    if "type" not in spec:
        raise ConfigError(f"{where} config {dict(spec)!r} has no 'type', e.g. {example}; "
                          f"registered {registry.name} types: {', '.join(registry.names())}")
    kind = spec["type"]
    if isinstance(kind, str):
        try:
            return registry.get(kind)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if callable(kind):
        return kind
    raise ConfigError(f"{where}.type must be a {registry.name} name, got {kind!r}")


def signature_of(target: Any) -> dict[str, inspect.Parameter]:
    """``target``'s parameters by name (none when it has no signature to read)."""
    try:
        return dict(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return {}


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, (list, tuple)):
        return any(_has_nan(item) for item in value)
    if isinstance(value, Mapping):
        return any(_has_nan(item) for item in value.values())
    return False


def check_values(target: Any, kwargs: Mapping[str, Any], where: str) -> None:
    """Each of ``kwargs`` against ``target``'s default of the same name, and NaN nowhere.

    A number default takes a number (or a tensor), a bool default ``True`` /
    ``False``, a tuple of numbers as many numbers; None and other defaults
    say nothing about the type.

    Example::

        >>> import torch
        >>> check_values(torch.optim.Adam, {"betas": [0.9]}, "optimizer")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: optimizer.betas must be a list of 2 numbers (...), got [0.9]
    """
    params = signature_of(target)
    owner = getattr(target, "__name__", "the")
    for name, value in kwargs.items():
        key = f"{where}.{name}"
        if _has_nan(value):
            raise ConfigError(f"{key} is NaN; give a number")
        param = params.get(name)
        if param is None or param.default is inspect.Parameter.empty or value is None:
            continue
        default = param.default
        said = f"{owner}'s default is {default!r}"
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{key} must be true or false ({said}), got {value!r}")
        elif is_number(default):
            if not is_number(value) and not isinstance(value, torch.Tensor):
                raise ConfigError(f"{key} must be a number ({said}), got {value!r}")
        elif isinstance(default, tuple) and default and all(is_number(v) for v in default) \
                and (not isinstance(value, (list, tuple)) or len(value) != len(default)
                     or not all(is_number(v) for v in value)):
            raise ConfigError(f"{key} must be a list of {len(default)} numbers ({said}), "
                              f"got {value!r}")


def constructed(build: Callable[[], Any], label: str, kwargs: Mapping[str, Any], where: str
                 ) -> Any:
    """``build()``; any exception becomes one ConfigError naming ``where`` and the arguments."""
    try:
        return build()
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except Exception as exc:  # torch's own checks: ValueError, TypeError, IndexError ...
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "no arguments"
        raise ConfigError(f"{where}: {label} rejects {shown}: {' '.join(str(exc).split())}") \
            from None


def run_check_args(target: Any, kwargs: Mapping[str, Any], where: str) -> bool:
    """Call ``target.check_args(**kwargs)`` when the class defines it; True if it did.

    ``check_args`` is the hook for classes whose constructor is too costly
    (or has side effects) to run while a config is checked: a staticmethod
    or classmethod taking the constructor's keyword arguments and raising
    :class:`ConfigError` for a bad value, building nothing.

    Example::

        >>> from hookline.engine.checks import positive_int
        >>> class Net:
        ...     @staticmethod
        ...     def check_args(width: int = 8) -> None:
        ...         positive_int(width, "width", owner="Net")
        >>> run_check_args(Net, {"width": 0}, "model")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: model: Net width must be an int >= 1, got 0
    """
    check = getattr(target, "check_args", None)
    if not callable(check):
        return False
    constructed(lambda: check(**kwargs), f"{type_label(target, None)}.check_args", kwargs, where)
    return True


def call_check(target: Any, kwargs: Mapping[str, Any], what: str, where: str) -> None:
    """``kwargs`` against ``target``'s signature (and MMEngine-only options refused), as
    one ConfigError naming ``where``."""
    refuse_mmengine_options(target, kwargs, where)  # paramwise_cfg ...: what to write instead
    try:
        check_call(target, kwargs, what)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
