"""One ``{"type": ...}`` config entry checked against its registry and signature, unbuilt.

Example::

    >>> from hookline.engine.registries import OPTIMIZERS
    >>> from hookline.app.config_check.spec import check_spec
    >>> check_spec(OPTIMIZERS, {"type": "SGD", "lr": 0.1, "momentm": 0.9}, "optimizer",
    ...            injected=("params",))
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: optimizer: ... 'momentm' (did you mean 'momentum'?); ...
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from hookline.core import ConfigError, Registry
from hookline.core.registry import check_call

__all__ = ["PLAIN", "check_spec", "example", "spec_kwargs"]

#: the types a config file's values have (anything else came from Python code)
PLAIN = (str, int, float, bool, list, type(None))


def check_spec(registry: Registry, spec: Any, where: str, *, ignore: Sequence[str] = (),
               injected: Sequence[str] = ()) -> Any:
    """Check one ``{"type": ..., **kwargs}`` entry without building it; returns the class
    (or function) it names, None for an object.

    Objects (anything but plain data) are accepted as they are: a Python
    config may hold a ready model or hook. ``ignore`` are keys the builder
    consumes itself; ``injected`` are arguments the builder supplies.
    """
    if not isinstance(spec, Mapping):
        if isinstance(spec, PLAIN):
            raise ConfigError(f"{where} must be a mapping with a 'type' key, e.g. "
                              f"{{type: {example(registry)}}}; got {spec!r}")
        return None
    if "type" not in spec:
        raise ConfigError(f"{where} has no 'type'; registered {registry.name} types: "
                          f"{_listing(registry)}")
    kind = spec["type"]
    try:
        target = registry.get(kind) if isinstance(kind, str) else kind
        kwargs = {k: v for k, v in spec.items() if k != "type" and k not in ignore}
        for name in injected:
            if name in kwargs:
                raise ConfigError(f"{name!r} is filled in by the Runner; remove it")
            if _accepts(target, name):
                kwargs[name] = None
        label = kind if isinstance(kind, str) else getattr(kind, "__name__", repr(kind))
        check_call(target, kwargs, f"{registry.name} type {label!r}")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return target


def spec_kwargs(spec: Mapping, ignore: Sequence[str] = ()) -> dict:
    """The constructor arguments of a ``{"type": ...}`` entry."""
    return {k: v for k, v in spec.items() if k != "type" and k not in ignore}


def _accepts(target: Any, name: str) -> bool:
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def example(registry: Registry) -> str:
    names = registry.names()
    return names[0] if names else "..."


def _listing(registry: Registry) -> str:
    names = registry.names()
    return ", ".join(names) if len(names) <= 30 else f"{len(names)} names, e.g. {', '.join(names[:10])}"
