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
from hookline.core.registry import MISSING, accepted_keywords, check_call, using_scope
from hookline.engine.mmengine_options import MMENGINE_OPTIONS, refuse_mmengine_options

__all__ = ["MMENGINE_ARGUMENTS", "PLAIN", "check_spec", "example", "scope_taking", "spec_kwargs"]

#: the types a config file's values have (anything else came from Python code)
PLAIN = (str, int, float, bool, list, type(None))


#: MMEngine arguments hookline does not take (docs/porting.md, "Not supported") -> instead
MMENGINE_ARGUMENTS = MMENGINE_OPTIONS  # the Runner's table (hookline.engine.mmengine_options)


def check_spec(registry: Registry, spec: Any, where: str, *, ignore: Sequence[str] = (),
               injected: Sequence[str] = ()) -> Any:
    """Check one ``{"type": ..., **kwargs}`` entry without building it; returns the class
    (or function) it names, None for an object.

    Objects (anything but plain data) are accepted as they are: a Python
    config may hold a ready model or hook. ``ignore`` are keys the builder
    consumes itself; ``injected`` are arguments the builder supplies. A
    ``_scope_`` key (MMEngine's) looks the type up in that scope's registry,
    as building it does.
    """
    if not isinstance(spec, Mapping):
        if isinstance(spec, PLAIN):
            # the name given, when it is one: optimizer: Adam -> {type: Adam}
            named = spec if isinstance(spec, str) and spec in registry.names() \
                else example(registry)
            raise ConfigError(f"{where} must be a mapping with a 'type' key, e.g. "
                              f"{{type: {named}}}; got {spec!r}")
        return None
    if "type" not in spec:
        raise ConfigError(f"{where} has no 'type'; registered {registry.name} types: "
                          f"{_listing(registry)}")
    registry, scope = _scope_registry(registry, spec, where)
    with using_scope(scope):
        return _check_type(registry, spec, where, ignore, injected)


def _scope_registry(registry: Registry, spec: Mapping, where: str) -> tuple[Registry, str | None]:
    """The registry a spec's ``_scope_`` names (and that scope), else ``registry`` and None."""
    if "_scope_" not in spec:
        return registry, None
    scope = spec["_scope_"]
    found = registry.find_scope(scope) if isinstance(scope, str) and scope else None
    if found is None:
        known = sorted({r.scope for r in (registry.root, *registry.root.descendants())
                        if r.scope})
        raise ConfigError(f"{where}._scope_: no {registry.name} registry has scope {scope!r} "
                          f"(known scopes: {', '.join(known) or 'none'})")
    return found, scope


def _check_type(registry: Registry, spec: Mapping, where: str, ignore: Sequence[str],
                injected: Sequence[str]) -> Any:
    """:func:`check_spec` of a spec with a ``type``, in the registry it is looked up in."""
    kind = spec["type"]
    try:
        # Registry.get, not registry.get: a subclass's get may return None for unknown names
        target = Registry.get(registry, kind) if isinstance(kind, str) else kind
        kwargs = spec_kwargs(spec, ignore)
        _refuse_mmengine_arguments(target, kwargs)
        for name in injected:
            if name in kwargs:
                raise ConfigError(f"{name!r} is filled in by the Runner; remove it")
            if _accepts(target, name):
                kwargs[name] = None
        label = kind if isinstance(kind, str) else getattr(kind, "__name__", repr(kind))
        try:
            check_call(target, kwargs, f"{registry.name} type {label!r}")
        except ConfigError as exc:
            other = scope_taking(registry, kind, kwargs, target) if isinstance(kind, str) \
                else None
            if other is None:
                raise
            raise ConfigError(f"{exc}; {other} takes these arguments: give "
                              f"{{'type': {other!r}}} for it") from None
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return target


def _refuse_mmengine_arguments(target: Any, kwargs: Mapping[str, Any]) -> None:
    """A :class:`ConfigError` for an MMEngine argument hookline does not port, unless the
    target names it in its own signature (the Runner's check, same words)."""
    try:
        refuse_mmengine_options(target, kwargs, "")
    except ConfigError as exc:
        raise ConfigError(str(exc).removeprefix(": ")) from None


def scope_taking(registry: Registry, name: str, kwargs: Mapping[str, Any],
                 target: Any = None) -> str | None:
    """``'scope.name'`` of another registry in ``registry``'s tree whose ``name`` (another
    object than ``target``) takes all of ``kwargs`` (a bare ``EMAHook`` given mmcv's
    arguments: ``mmcv.EMAHook``), as the Runner's builder names it; None when there is none."""
    if "." in name:
        return None
    fallback = None  # one that takes **kwargs: named only when no signature lists them all
    for other in registry.root.descendants():
        found = other.own(name)
        if other is registry or found is MISSING or found is target or not callable(found):
            continue
        accepted = accepted_keywords(found)
        if accepted is None:
            fallback = fallback or f"{other.scope}.{name}"
        elif set(kwargs) <= accepted:
            return f"{other.scope}.{name}"
    return fallback


def spec_kwargs(spec: Mapping, ignore: Sequence[str] = ()) -> dict:
    """The constructor arguments of a ``{"type": ...}`` entry (``_scope_`` is not one)."""
    return {k: v for k, v in spec.items() if k not in ("type", "_scope_") and k not in ignore}


def _names(target: Any, name: str) -> bool:
    try:
        return name in inspect.signature(target).parameters
    except (TypeError, ValueError):
        return False


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
