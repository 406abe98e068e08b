"""``mmengine.registry``: ``Registry`` with MMEngine's constructor, scopes and root registries.

Each root registry here has scope ``"mmengine"`` and, where hookline has the
same registry, hookline's as its parent: ``HOOKS.get("CheckpointHook")``
finds MMEngine's signature first (:mod:`hookline.compat.mmengine.hooks`),
then hookline's built-ins. A downstream project's registry,
``Registry("hook", parent=HOOKS, locations=["toydet.engine.hooks"])``,
takes its scope from the package that creates it, so a name it registers
(``EMAHook``) never replaces anyone else's: ``"toydet.EMAHook"`` names it,
and a plain ``"EMAHook"`` built through it finds it first.

Example::

    >>> from hookline.compat.mmengine.registry import HOOKS, Registry
    >>> PROJECT = Registry("hook", parent=HOOKS, scope="toyproject")
    >>> @PROJECT.register_module()
    ... class EMAHook:
    ...     pass
    >>> PROJECT.get("EMAHook") is EMAHook, HOOKS.get("EMAHook") is EMAHook
    (True, False)
    >>> PROJECT.get("NoSuchHook") is None     # MMEngine's get returns None
    True
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from hookline.core import ConfigError
from hookline.core import registry as _core
from hookline.engine import registries as _native
from hookline.engine.build import OPTIM_WRAPPER_CONSTRUCTORS as _OPTIM_WRAPPER_CONSTRUCTORS
from hookline.engine.registries import METRICS as _NATIVE_METRICS

_SKIPPED_MODULES = ("hookline.core.registry", "hookline.compat.mmengine.registry",
                    "hookline.compat.mmcv.utils")


def infer_scope(depth: int = 1) -> str:
    """The top-level package of the first caller outside the registry modules (MMEngine's
    scope inference: ``toydet/registry.py`` gives ``"toydet"``)."""
    frame: Any = inspect.currentframe()
    for _ in range(depth):
        frame = frame.f_back if frame is not None else None
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name not in _SKIPPED_MODULES:
            return str(name).split(".")[0] or "mmengine"
        frame = frame.f_back
    return "mmengine"


class Registry(_core.Registry):
    """MMEngine's ``Registry(name, build_func=None, parent=None, scope=None, locations=[])``.

    ``scope`` defaults to the top-level package of the module that creates
    the registry. ``get`` returns None for an unknown name (as in MMEngine);
    ``build`` raises one :class:`ConfigError` naming it and the accepted names.
    ``build_func(cfg, *args, registry=..., **kwargs)`` replaces the default
    :func:`build_from_cfg` (a child inherits its parent's).
    """

    def __init__(self, name: str, build_func: Callable[..., Any] | None = None,
                 parent: _core.Registry | None = None, scope: str | None = None,
                 locations: Sequence[str] = ()) -> None:
        super().__init__(name, locations=tuple(locations), parent=parent,
                         scope=scope if scope is not None else infer_scope(2))
        inherited = getattr(parent, "build_func", None)
        self.build_func: Callable[..., Any] | None = build_func or inherited
        self._builtins: dict[str, Any] = {}

    @property
    def builtins(self) -> dict[str, Any]:
        """The names :meth:`add_builtins` gave this registry."""
        return dict(self._builtins)

    def add_builtins(self, objects: Mapping[str, Any]) -> None:
        """Names this registry answers for without owning them: a registration of the same
        name (a ported file registering ``EMAHook``) takes precedence and never clashes."""
        self._builtins.update(objects)

    def own(self, name: str) -> Any:
        found = super().own(name)
        return self._builtins.get(name, found) if found is _core.MISSING else found

    # -- MMEngine's API --------------------------------------------------------------------
    @staticmethod
    def infer_scope() -> str:
        return infer_scope(2)

    @staticmethod
    def split_scope_key(key: str) -> tuple[str | None, str]:
        """``"toydet.ResNet"`` -> ``("toydet", "ResNet")``; ``"ResNet"`` -> ``(None, "ResNet")``."""
        scope, dot, rest = key.partition(".")
        return (scope, rest) if dot else (None, key)

    def get(self, key: str) -> Any:
        """The object registered as ``key`` (see the class), or None."""
        if not isinstance(key, str):
            raise TypeError(f"The key argument of `Registry.get` must be a str, got {type(key)}")
        found = self._find(key)
        if len(found) > 1:
            return super().get(key)  # the error naming each scope
        return found[0][1] if found else None

    def build(self, cfg: Mapping[str, Any], *args: Any, default_args: Mapping[str, Any] | None
              = None, **kwargs: Any) -> Any:
        """Build ``cfg`` (``default_args`` fill in, ``cfg`` wins) with :attr:`build_func`."""
        if self.build_func is not None:
            return self.build_func(cfg, *args, default_args=default_args, registry=self, **kwargs)
        return build_from_cfg(cfg, self, default_args)

    def import_from_location(self) -> None:
        """Import the modules given as ``locations`` (done on the first lookup anyway)."""
        self.import_locations()

    @contextlib.contextmanager
    def switch_scope_and_registry(self, scope: str | None) -> Iterator[Registry]:
        """Inside: ``scope`` is the default scope; yields its registry in this tree (or self)."""
        with _core.using_scope(scope):
            chosen = _core.default_scope()
            found = self.find_scope(chosen) if chosen is not None else None
            yield found if isinstance(found, Registry) else self


def build_from_cfg(cfg: Mapping[str, Any], registry: _core.Registry,
                   default_args: Mapping[str, Any] | None = None) -> Any:
    """MMEngine's ``build_from_cfg``: ``type`` may come from ``default_args``; ``_scope_``
    switches scope while building; bad configs are one :class:`ConfigError`."""
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"cfg should be a dict, got {type(cfg).__name__}: {cfg!r}")
    if default_args is not None and not isinstance(default_args, Mapping):
        raise ConfigError(f"default_args should be a dict or None, got {default_args!r}")
    merged = dict(cfg)
    for key, value in (default_args or {}).items():
        merged.setdefault(key, value)
    return _core.Registry.build(registry, merged)


class DefaultScope:
    """MMEngine's ``DefaultScope``: the scope unscoped names are looked up in first.

    Example::

        >>> DefaultScope.get_instance("run", scope_name="toydet").scope_name
        'toydet'
        >>> with DefaultScope.overwrite_default_scope("mmengine"):
        ...     DefaultScope.get_current_instance().scope_name
        'mmengine'
        >>> DefaultScope.get_current_instance().scope_name
        'toydet'
    """

    _instances: dict[str, DefaultScope] = {}

    def __init__(self, name: str, scope_name: str) -> None:
        if not isinstance(scope_name, str) or not scope_name:
            raise ConfigError(f"scope_name must be a non-empty string, got {scope_name!r}")
        self.instance_name = name
        self.scope_name = scope_name

    @classmethod
    def get_instance(cls, name: str, scope_name: str = "mmengine") -> DefaultScope:
        """The instance called ``name`` (made if new); it becomes the default scope."""
        instance = cls._instances.get(name)
        if instance is None:
            instance = cls._instances[name] = cls(name, scope_name)
        _core.set_default_scope(instance.scope_name)
        return instance

    @classmethod
    def get_current_instance(cls) -> DefaultScope | None:
        scope = _core.default_scope()
        return None if scope is None else cls("current", scope)

    @classmethod
    def check_instance_created(cls, name: str) -> bool:
        return name in cls._instances

    @classmethod
    @contextlib.contextmanager
    def overwrite_default_scope(cls, scope_name: str | None) -> Iterator[None]:
        with _core.using_scope(scope_name):
            yield


_COUNTER = itertools.count()


def init_default_scope(scope: str) -> None:
    """Make ``scope`` the default scope (MMEngine's ``init_default_scope``)."""
    DefaultScope.get_instance(f"{scope}-{time.strftime('%Y%m%d-%H%M%S')}-{next(_COUNTER)}",
                              scope_name=scope)


def _root(name: str, native: _core.Registry | None = None) -> Registry:
    return Registry(name, parent=native, scope="mmengine")


RUNNERS = _root("runner")
RUNNER_CONSTRUCTORS = _root("runner constructor")
LOOPS = _root("loop", _native.LOOPS)
HOOKS = _root("hook", _native.HOOKS)
STRATEGIES = _root("strategy")
DATASETS = _root("dataset", _native.DATASETS)
DATA_SAMPLERS = _root("data sampler")
TRANSFORMS = _root("transform")
MODELS = _root("model", _native.MODELS)
MODEL_WRAPPERS = _root("model_wrapper")
WEIGHT_INITIALIZERS = _root("weight initializer")
OPTIMIZERS = _root("optimizer", _native.OPTIMIZERS)
OPTIM_WRAPPERS = _root("optim_wrapper", _native.OPTIM_WRAPPERS)
OPTIM_WRAPPER_CONSTRUCTORS = _root("optimizer wrapper constructor", _OPTIM_WRAPPER_CONSTRUCTORS)
PARAM_SCHEDULERS = _root("parameter scheduler", _native.PARAM_SCHEDULERS)
METRICS = _root("metric", _NATIVE_METRICS)
EVALUATOR = _root("evaluator")
TASK_UTILS = _root("task util")
VISUALIZERS = _root("visualizer")
VISBACKENDS = _root("vis_backend")
LOG_PROCESSORS = _root("log_processor")
INFERENCERS = _root("inferencer")
FUNCTIONS = _root("function", _native.COLLATE_FUNCTIONS)


def count_registered_modules(*args: Any, **kwargs: Any) -> dict[str, list[str]]:
    """The names each root registry holds (MMEngine's helper, without the file dump)."""
    roots = {r.name: r for r in (RUNNERS, LOOPS, HOOKS, DATASETS, MODELS, OPTIMIZERS,
                                 OPTIM_WRAPPERS, PARAM_SCHEDULERS, METRICS, VISUALIZERS)}
    return {name: sorted(set(r.names()) | set(r.builtins)) for name, r in roots.items()}


__all__ = [
    "DATASETS", "DATA_SAMPLERS", "EVALUATOR", "FUNCTIONS", "HOOKS", "INFERENCERS",
    "LOG_PROCESSORS", "LOOPS", "METRICS", "MODELS", "MODEL_WRAPPERS", "OPTIMIZERS",
    "OPTIM_WRAPPERS", "OPTIM_WRAPPER_CONSTRUCTORS", "PARAM_SCHEDULERS", "RUNNERS",
    "RUNNER_CONSTRUCTORS", "STRATEGIES", "TASK_UTILS", "TRANSFORMS", "VISBACKENDS",
    "VISUALIZERS", "WEIGHT_INITIALIZERS", "DefaultScope", "Registry", "build_from_cfg",
    "count_registered_modules", "init_default_scope",
]
