"""Registry: build objects from plain dicts such as ``{"type": "SGD", "lr": 0.1}``.

Example::

    >>> from hookline.core import Registry
    >>> SHAPES = Registry("shape")
    >>> @SHAPES.register()
    ... class Square:
    ...     def __init__(self, side=1.0):
    ...         self.area = side * side
    >>> SHAPES.build({"type": "Square", "side": 3}).area
    9
    >>> SHAPES.build({"type": "Sqare"})
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: unknown shape type 'Sqare'; did you mean 'Square'? (accepted: Square)
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .errors import ConfigError, closest_names


def accepted_keywords(target: Callable[..., Any]) -> set[str] | None:
    """The keyword arguments ``target`` accepts, or None when it takes ``**kwargs``
    (or has no readable signature)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    names = set()
    for param in signature.parameters.values():
        if param.kind is param.VAR_KEYWORD:
            return None
        if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            names.add(param.name)
    return names


def check_call(target: Callable[..., Any], kwargs: Mapping[str, Any], what: str) -> None:
    """Raise :class:`ConfigError` unless ``target(**kwargs)`` matches its signature."""
    accepted = accepted_keywords(target)
    if accepted is not None:
        unknown = sorted(set(kwargs) - accepted)
        if unknown:
            hints = []
            for key in unknown:
                close = closest_names(key, accepted, n=1)
                hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise ConfigError(
                f"{what} got unexpected argument(s) {', '.join(hints)}; "
                f"it accepts: {', '.join(sorted(accepted)) or 'no keyword arguments'}"
            )
    try:
        inspect.signature(target).bind(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{what}: {exc}") from None
    except ValueError:  # no signature: nothing to check
        pass


class Registry:
    """A name -> class/function table that builds objects from config dicts.

    ``locations`` names modules that register into this registry; they are
    imported the first time a name is looked up (MMEngine's idiom), so a
    layer can find the objects of a layer above it by name without importing
    it. A location that fails to import is remembered and named in the
    unknown-name error.
    """

    def __init__(self, name: str, *, locations: tuple[str, ...] = ()) -> None:
        self.name = name
        self._items: dict[str, Any] = {}
        self._locations = tuple(locations)
        self._import_errors: dict[str, str] = {}

    def _import_locations(self) -> None:
        """Import the declared locations once (later lookups cost one check)."""
        if not self._locations:
            return
        locations, self._locations = self._locations, ()
        for module in locations:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                self._import_errors[module] = str(exc)

    def register(self, obj: Any = None, *, name: str | None = None, force: bool = False) -> Any:
        """Register ``obj`` under ``name`` (default: its ``__name__``) and return it.

        Works as ``@REG.register()``, ``@REG.register(name="Alias")``,
        ``@REG.register`` and ``REG.register(obj)``. A name already taken is a
        :class:`ConfigError` unless ``force=True``.
        """
        if obj is None:
            return lambda target: self.register(target, name=name, force=force)
        key = name if name is not None else getattr(obj, "__name__", None)
        if not isinstance(key, str) or not key:
            raise ConfigError(f"cannot register {obj!r} in {self.name!r}: give it a name=")
        if key in self._items and not force:
            raise ConfigError(
                f"{key!r} is already registered in the {self.name} registry "
                f"(as {self._items[key]!r}); pass force=True to replace it"
            )
        self._items[key] = obj
        return obj

    def get(self, name: str) -> Any:
        """The object registered as ``name``; a :class:`ConfigError` with suggestions if none."""
        try:
            return self._items[name]
        except (KeyError, TypeError):
            pass
        if self._locations:
            self._import_locations()
            return self.get(name)
        error = ConfigError.unknown(f"{self.name} type", name, self._items)
        if self._import_errors:
            failed = "; ".join(f"{m}: {e}" for m, e in self._import_errors.items())
            error = ConfigError(f"{error} (could not import {failed})")
        raise error from None

    def build(self, cfg: Mapping[str, Any], **defaults: Any) -> Any:
        """Call ``cfg["type"]`` with the other keys (over ``defaults``) as keyword arguments.

        ``cfg`` is not mutated. Missing or unknown types and arguments the
        target does not take are :class:`ConfigError` s raised before it runs.
        """
        if not isinstance(cfg, Mapping):
            raise ConfigError(
                f"a {self.name} config must be a dict with a 'type' key, got {cfg!r}"
            )
        if "type" not in cfg:
            raise ConfigError(
                f"{self.name} config {dict(cfg)!r} has no 'type' key; "
                f"registered types: {', '.join(self.names()) or 'none'}"
            )
        kind = cfg["type"]
        target = self.get(kind) if isinstance(kind, str) else kind
        if not callable(target):
            raise ConfigError(f"{self.name} type must be a name or a callable, got {kind!r}")
        kwargs = {**defaults, **{k: v for k, v in cfg.items() if k != "type"}}
        label = kind if isinstance(kind, str) else getattr(kind, "__name__", repr(kind))
        check_call(target, kwargs, f"{self.name} type {label!r}")
        return target(**kwargs)

    def names(self) -> list[str]:
        """The registered names, sorted."""
        self._import_locations()
        return sorted(self._items)

    def items(self) -> list[tuple[str, Any]]:
        self._import_locations()
        return sorted(self._items.items())

    def __contains__(self, name: object) -> bool:
        if name not in self._items:
            self._import_locations()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self._import_locations()
        return len(self._items)

    def __repr__(self) -> str:
        return f"<Registry {self.name!r}: {len(self._items)} entries>"
