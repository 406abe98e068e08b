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

Registries form trees, as MMEngine's do: a child registry (``parent=``, with
a ``scope``) sees its ancestors' names, ``"scope.Name"`` picks the registry
of that scope, and the same name may live in two scopes without clashing::

    >>> TOYS = Registry("shape", parent=SHAPES, scope="toys")
    >>> @TOYS.register_module()
    ... class Square:
    ...     area = "toy"
    >>> TOYS.get("Square").area, SHAPES.get("toys.Square").area
    ('toy', 'toy')
    >>> SHAPES.get("Square") is not TOYS.get("Square")   # the parent keeps its own
    True
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .call_check import accepted_keywords, check_call
from .errors import ConfigError
from .scope import default_scope, set_default_scope, using_scope

__all__ = ["MISSING", "SCOPE_MODULES", "Registry", "accepted_keywords", "check_call",
           "default_scope", "set_default_scope", "using_scope"]

#: what :meth:`Registry.own` returns for a name it does not hold
MISSING: Any = object()
#: scope -> the module that makes its registries, imported by :meth:`Registry.find_scope` the
#: first time the scope is named (instead of ``<scope>.registry``); the ``hookline`` package
#: maps ``"mmengine"`` and ``"mmcv"`` to ``hookline.compat``'s ports
SCOPE_MODULES: dict[str, str] = {}
#: scopes whose ``<scope>.registry`` module was imported (or failed to) by :meth:`Registry.find_scope`
_TRIED_SCOPES: set[str] = set()
#: what :meth:`Registry.register` refuses to hold: plain values, never a class or a builder
_VALUES = (str, bytes, int, float, complex, bool, list, tuple, dict, set, frozenset)


def _names(name: Any) -> list[str]:
    """``register``'s ``name=``: None (the object's ``__name__``), a str or a list of str."""
    if name is None:
        return []
    if isinstance(name, str):
        names = [name]
    elif isinstance(name, Sequence) and all(isinstance(n, str) for n in name):
        names = list(name)
    else:
        raise ConfigError(f"a registry name must be None, a str or a list of str, got "
                          f"{ConfigError.brief(name)}")
    if not names or not all(names):
        raise ConfigError(f"a registry name must be a non-empty str, got {name!r}")
    return names


class Registry:
    """A name -> class/function table that builds objects from config dicts.

    ``locations`` names modules that register into this registry; they are
    imported the first time a name is looked up (MMEngine's idiom), so a
    layer can find the objects of a layer above it by name without importing
    it. A location that fails to import is remembered and named in the
    unknown-name error.

    ``parent`` and ``scope`` make it a node of a registry tree (MMEngine's
    hierarchy). A name is looked up: with a ``"scope."`` prefix, in that
    scope's registry only; else in the default scope's registry (see
    :func:`set_default_scope`) when it lies under this one, then here, then in
    the ancestors; and last in the descendants, when exactly one of them has
    it (two are a :class:`ConfigError` naming ``"scope.Name"`` for each).
    """

    def __init__(self, name: str, *, locations: Sequence[str] = (),
                 parent: Registry | None = None, scope: str | None = None) -> None:
        if scope is not None and (not isinstance(scope, str) or not scope or "." in scope):
            raise ConfigError(f"registry scope must be a non-empty name without dots, got {scope!r}")
        self.name = name
        self.scope = scope
        self._items: dict[str, Any] = {}
        self._locations = tuple(locations)
        self._import_errors: dict[str, str] = {}
        self.children: dict[str, Registry] = {}
        self.parent: Registry | None = None
        if parent is not None:
            if not isinstance(parent, Registry):
                raise ConfigError(f"a registry's parent must be a Registry, got {parent!r}")
            if scope is None:
                raise ConfigError(f"registry {name!r} needs a scope to be a child of {parent!r}")
            if scope in parent.children:
                raise ConfigError(f"the {parent.name} registry already has a child of scope "
                                  f"{scope!r}; give this registry another scope")
            parent.children[scope] = self
            self.parent = parent

    # -- the tree -------------------------------------------------------------------------
    @property
    def root(self) -> Registry:
        """The top of this registry's tree."""
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    @property
    def module_dict(self) -> dict[str, Any]:
        """This registry's own names (MMEngine's name), not its ancestors'."""
        self.import_locations()
        return self._items

    def find_scope(self, scope: str) -> Registry | None:
        """The registry of ``scope`` in this registry's tree, or None. A scope not in the
        tree yet is looked for in the module ``<scope>.registry``, imported on demand (where
        MMEngine-style projects declare their registries), or in the one :data:`SCOPE_MODULES`
        names for it."""
        root = self.root
        found = next((r for r in (root, *root.descendants()) if r.scope == scope), None)
        if found is None and scope.isidentifier() and scope not in _TRIED_SCOPES:
            _TRIED_SCOPES.add(scope)
            try:
                importlib.import_module(SCOPE_MODULES.get(scope, f"{scope}.registry"))
            except ImportError:
                return None
            found = next((r for r in (root, *root.descendants()) if r.scope == scope), None)
        return found

    def descendants(self) -> Iterator[Registry]:
        """Children, grandchildren ... depth first."""
        for child in self.children.values():
            yield child
            yield from child.descendants()

    def is_under(self, other: Registry) -> bool:
        """Whether ``other`` is this registry or one of its ancestors."""
        node: Registry | None = self
        while node is not None:
            if node is other:
                return True
            node = node.parent
        return False

    def import_locations(self) -> None:
        """Import the declared locations once (later lookups cost one check)."""
        if not self._locations:
            return
        locations, self._locations = self._locations, ()
        for module in locations:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                self._import_errors[module] = str(exc)

    # -- registering ------------------------------------------------------------------------
    def register(self, obj: Any = None, *, name: str | Sequence[str] | None = None,
                 force: bool = False) -> Any:
        """Register ``obj`` under ``name`` (default: its ``__name__``; a list of names registers
        it under each) and return it.

        Works as ``@REG.register()``, ``@REG.register(name="Alias")``,
        ``@REG.register`` and ``REG.register(obj)``. A name already taken is a
        :class:`ConfigError` unless ``force=True``.
        """
        if not isinstance(force, bool):
            raise ConfigError(f"register force must be True or False, got {ConfigError.brief(force)}")
        names = _names(name)
        if obj is None:
            return lambda target: self.register(target, name=name, force=force)
        self._check_target(obj)
        own: Any = getattr(obj, "__name__", None)
        if not names and not (isinstance(own, str) and own):
            raise ConfigError(f"cannot register {ConfigError.brief(obj)} in the {self.name} "
                              "registry: it has no __name__; give it a name=")
        keys = names or [own]
        for key in keys:
            if key in self._items and not force:
                raise ConfigError(
                    f"{key!r} is already registered in the {self.name} registry "
                    f"(as {self._items[key]!r}); pass force=True to replace it"
                )
        for key in keys:
            self._items[key] = obj
        return obj

    def _check_target(self, obj: Any) -> None:
        """A :class:`ConfigError` for a plain value (a str, a number ...) given as what to
        register: the mmengine habit ``REG.register("Alias")`` meant ``name="Alias"``."""
        if isinstance(obj, _VALUES):
            hint = (f"; to register under a name, write @{self.name.upper()}.register(name={obj!r})"
                    if isinstance(obj, str) else "")
            raise ConfigError(f"the {self.name} registry takes classes, functions and other "
                              f"objects to build or look up, not a {type(obj).__name__} value: "
                              f"got {ConfigError.brief(obj)}{hint}")

    def register_module(self, name: str | Sequence[str] | None = None, force: bool = False,
                        module: Any = None) -> Any:
        """MMEngine's and mmcv's spelling of :meth:`register`: ``@REG.register_module()``,
        ``@REG.register_module(name="Alias")`` (or a list of names),
        ``REG.register_module(module=cls)``."""
        if not isinstance(force, bool):
            raise ConfigError(f"register_module force must be True or False, got {force!r}")
        if name is None or isinstance(name, str):
            names: list[str | None] = [name]
        elif isinstance(name, Sequence) and all(isinstance(n, str) for n in name):
            names = list(name)
        else:
            bare = (" (as a decorator, write @register_module() with parentheses)"
                    if isinstance(name, type) else "")
            raise ConfigError(f"register_module name must be None, a str or a list of str, "
                              f"got {name!r}{bare}")

        def apply(target: Any) -> Any:
            if not callable(target):
                raise ConfigError(f"only callables can be registered in the {self.name} "
                                  f"registry, got {target!r}")
            for each in names:
                self.register(target, name=each, force=force)
            return target

        return apply(module) if module is not None else apply

    # -- looking up ------------------------------------------------------------------------
    def own(self, name: str) -> Any:
        """``name`` in this registry itself (not its ancestors), or :data:`MISSING`;
        subclasses may add fallbacks."""
        if name not in self._items:
            self.import_locations()
        return self._items.get(name, MISSING)

    def _find(self, name: Any) -> list[tuple[Registry, Any]]:
        """Where ``name`` resolves: one ``(registry, object)``, several (ambiguous), or none."""
        if not isinstance(name, str):
            return []
        if "." in name:
            scope, short = name.split(".", 1)
            scoped = self.find_scope(scope)
            if scoped is not None:
                found = scoped.own(short)
                return [] if found is MISSING else [(scoped, found)]
        start: Registry | None = self
        chosen = default_scope()
        if chosen is not None and chosen != self.scope:
            registry = self.find_scope(chosen)
            if registry is not None and registry.is_under(self):
                start = registry
        while start is not None:
            found = start.own(name)
            if found is not MISSING:
                return [(start, found)]
            start = start.parent
        return [(r, obj) for r in self.descendants() if (obj := r.own(name)) is not MISSING]

    def get(self, name: str) -> Any:
        """The object registered as ``name``; a :class:`ConfigError` with suggestions if none."""
        found = self._find(name)
        if len(found) == 1:
            return found[0][1]
        if found:
            options = ", ".join(f"'{r.scope}.{name}'" for r, _ in found)
            raise ConfigError(f"{self.name} type {name!r} is registered in several scopes; "
                              f"name one of {options}")
        visible: list[str] = []
        node: Registry | None = self
        while node is not None:
            visible += node.module_dict
            node = node.parent
        visible += [f"{r.scope}.{key}" for r in self.descendants() for key in r.module_dict]
        error = ConfigError.unknown(f"{self.name} type", name, sorted(set(visible)))
        scope = name.split(".", 1)[0] if isinstance(name, str) and "." in name else None
        dotted_here = any(key.startswith(f"{scope}.") for key in visible) if scope else False
        if scope is not None and not dotted_here and self.find_scope(scope) is None:
            error = ConfigError(f"{error} (no {self.name} registry of scope {scope!r} is loaded: "
                                "import the package that makes it first)")
        if self._import_errors:
            failed = "; ".join(f"{m}: {e}" for m, e in self._import_errors.items())
            error = ConfigError(f"{error} (could not import {failed})")
        raise error from None

    def build(self, cfg: Mapping[str, Any], **defaults: Any) -> Any:
        """Call ``cfg["type"]`` with the other keys (over ``defaults``) as keyword arguments.

        ``cfg`` is not mutated. Missing or unknown types and arguments the
        target does not take are :class:`ConfigError` s raised before it runs.
        A ``_scope_`` key builds in that scope's registry, with that scope as
        the default scope while it builds (MMEngine's ``_scope_``).
        """
        if not isinstance(cfg, Mapping):
            raise ConfigError(
                f"a {self.name} config must be a dict with a 'type' key, got {cfg!r}"
            )
        if "_scope_" in cfg:
            scope = cfg["_scope_"]
            registry = self.find_scope(scope) if isinstance(scope, str) else None
            if registry is None:
                raise ConfigError(f"{self.name} config names _scope_ {scope!r}, which no registry "
                                  f"of this tree has")
            with using_scope(scope):
                return registry.build({k: v for k, v in cfg.items() if k != "_scope_"},
                                      **defaults)
        if "type" not in cfg:
            raise ConfigError(
                f"{self.name} config {dict(cfg)!r} has no 'type' key; "
                f"registered types: {', '.join(self.names()) or 'none'}"
            )
        kind = cfg["type"]
        # Registry.get, not self.get: a subclass's get may return None for unknown names
        target = Registry.get(self, kind) if isinstance(kind, str) else kind
        if not callable(target):
            raise ConfigError(f"{self.name} type must be a name or a callable, got {kind!r}")
        kwargs = {**defaults, **{k: v for k, v in cfg.items() if k != "type"}}
        label = kind if isinstance(kind, str) else getattr(kind, "__name__", repr(kind))
        try:
            check_call(target, kwargs, f"{self.name} type {label!r}")
        except ConfigError as exc:
            other = self._scope_taking(kind, kwargs) if isinstance(kind, str) else None
            if other is None:
                raise
            raise ConfigError(f"{exc}; {other} takes these arguments: give "
                              f"{{'type': {other!r}}} for it") from None
        return target(**kwargs)

    def _scope_taking(self, name: str, kwargs: Mapping[str, Any]) -> str | None:
        """``scope.name`` of another registry of this tree whose ``name`` accepts ``kwargs``
        (a ported config's bare ``EMAHook`` with mmcv's arguments: ``mmcv.EMAHook``)."""
        if "." in name:
            return None
        loose = None  # one taking **kwargs: named only when none lists the arguments
        for registry in self.root.descendants():
            found = registry.own(name)
            if found is MISSING or registry is self or not callable(found):
                continue
            accepted = accepted_keywords(found)
            if accepted is not None and set(kwargs) <= accepted:
                return f"{registry.scope}.{name}"
            if accepted is None and loose is None:
                loose = f"{registry.scope}.{name}"
        return loose

    def names(self) -> list[str]:
        """This registry's own names, sorted."""
        self.import_locations()
        return sorted(self._items)

    def items(self) -> list[tuple[str, Any]]:
        self.import_locations()
        return sorted(self._items.items())

    def __contains__(self, name: object) -> bool:
        """Whether :meth:`get` finds ``name`` (here, in an ancestor or a descendant)."""
        return bool(self._find(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.import_locations()
        return len(self._items)

    def __repr__(self) -> str:
        scope = f" ({self.scope})" if self.scope else ""
        return f"<Registry {self.name!r}{scope}: {len(self._items)} entries>"
