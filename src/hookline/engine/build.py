"""Build optimizers, optimizer wrappers and parameter schedulers from objects or config dicts.

Example::

    >>> import torch
    >>> from hookline.engine.build import build_optimizer, build_schedulers
    >>> model = torch.nn.Linear(2, 1)
    >>> opt = build_optimizer({"type": "SGD", "lr": 0.1}, model)
    >>> [(type(s).__name__, by_epoch) for s, by_epoch in
    ...  build_schedulers({"type": "StepLR", "step_size": 2}, opt)]
    [('StepLR', True)]
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from hookline.core import ConfigError, Registry
from hookline.core.registry import check_call

from .amp_optim_wrapper import AmpOptimWrapper
from .distributed import unwrap_model
from .mmengine_options import MMENGINE_OPTIONS, refuse_mmengine_options
from .optim_wrapper import OptimWrapper, OptimWrapperLike
from .optim_wrapper_dict import OptimWrapperDict
from .registries import OPTIM_WRAPPERS, OPTIMIZERS, PARAM_SCHEDULERS

__all__ = ["OPTIM_WRAPPER_CONSTRUCTORS", "AmpOptimWrapper", "DefaultOptimWrapperConstructor",
           "build_optim_wrapper", "build_optimizer", "build_schedulers", "check_constructor"]

#: MMEngine's optimizer wrapper constructors by name: ``optim_wrapper={"constructor": name,
#: ...}``; ``hookline.compat.mmengine.registry.OPTIM_WRAPPER_CONSTRUCTORS`` hangs below it
OPTIM_WRAPPER_CONSTRUCTORS = Registry("optim_wrapper_constructor", scope="hookline")


def build_optimizer(spec: Any, model: torch.nn.Module) -> torch.optim.Optimizer | None:
    """A torch optimizer, or a dict naming any ``torch.optim`` class (``{"type": "SGD", "lr": 0.1}``).

    A config gets every parameter of ``model``, frozen ones (``requires_grad=False``)
    included, as MMEngine's constructor gives them: torch skips a parameter without a
    gradient, and one unfrozen later (a backbone thawed by a hook) trains from then on.
    """
    if spec is None or isinstance(spec, torch.optim.Optimizer):
        return spec
    if not isinstance(spec, Mapping):
        raise ConfigError(f"optimizer must be a torch.optim.Optimizer or a config dict, got {spec!r}")
    optimizer: torch.optim.Optimizer = OPTIMIZERS.build(spec, params=list(model.parameters()))
    return optimizer


@OPTIM_WRAPPER_CONSTRUCTORS.register()
class DefaultOptimWrapperConstructor:
    """MMEngine's default constructor: ``DefaultOptimWrapperConstructor(optim_wrapper_cfg)(model)``
    builds ``optim_wrapper_cfg["optimizer"]`` over every parameter of ``model`` and wraps it in
    the config's wrapper type (``OptimWrapper`` by default).

    ``paramwise_cfg`` (per-parameter learning rates and decay) is not supported by this class:
    a non-empty one is a :class:`ConfigError` (give the optimizer param groups yourself). As in
    MMEngine, ``optimizer_cfg`` (popped out of ``optim_wrapper_cfg``), ``base_lr``, ``base_wd``
    and ``paramwise_cfg`` are attributes, and a non-empty ``paramwise_cfg`` builds the
    optimizer over the groups ``add_params(params, model)`` appends: a subclass that overrides
    ``add_params`` (mmdet's and mmpretrain's layer-decay constructors) takes one. A project's
    constructor (mmagic's ``MultiOptimWrapperConstructor``) may call this one per submodule.

    Example::

        >>> make = DefaultOptimWrapperConstructor({"optimizer": {"type": "SGD", "lr": 0.1},
        ...                                        "accumulative_counts": 2})
        >>> make.base_lr, make.optim_wrapper_cfg
        (0.1, {'accumulative_counts': 2})
        >>> make(torch.nn.Linear(2, 1))
        OptimWrapper(optimizer=SGD, accumulative_counts=2, clip_grad=None)
    """

    def __init__(self, optim_wrapper_cfg: Mapping[str, Any],
                 paramwise_cfg: Mapping[str, Any] | None = None) -> None:
        if not isinstance(optim_wrapper_cfg, Mapping) or "optimizer" not in optim_wrapper_cfg:
            raise ConfigError("DefaultOptimWrapperConstructor needs an optim_wrapper config with "
                              "an 'optimizer', e.g. {'type': 'OptimWrapper', 'optimizer': "
                              f"{{'type': 'SGD', 'lr': 0.01}}}}, got {optim_wrapper_cfg!r}")
        if paramwise_cfg is not None and not isinstance(paramwise_cfg, Mapping):
            raise ConfigError(f"{type(self).__name__}: paramwise_cfg must be None or a dict, "
                              f"got {paramwise_cfg!r}")
        self.optim_wrapper_cfg = dict(optim_wrapper_cfg)
        self.optimizer_cfg: Any = self.optim_wrapper_cfg.pop("optimizer")
        self.paramwise_cfg: dict[str, Any] = dict(paramwise_cfg or {})
        spec = self.optimizer_cfg if isinstance(self.optimizer_cfg, Mapping) else {}
        self.base_lr: float | None = spec.get("lr")
        self.base_wd: float | None = spec.get("weight_decay")
        if self.paramwise_cfg and type(self).add_params is DefaultOptimWrapperConstructor.add_params:
            self._refuse_paramwise_cfg()

    def _refuse_paramwise_cfg(self) -> None:
        raise ConfigError(f"{type(self).__name__}: MMEngine's paramwise_cfg is not supported by "
                          f"hookline: {MMENGINE_OPTIONS['paramwise_cfg']} (or override "
                          "add_params in a subclass)")

    def add_params(self, params: list[dict[str, Any]], module: torch.nn.Module, prefix: str = "",
                   is_dcn_module: int | float | None = None) -> None:
        """Append ``module``'s parameters to ``params`` (one group each, as MMEngine's).
        Without ``paramwise_cfg`` every group keeps the optimizer's settings; a subclass
        overrides this to set per-group ones."""
        del prefix, is_dcn_module  # MMEngine's signature: they select paramwise_cfg's rules
        if self.paramwise_cfg:
            self._refuse_paramwise_cfg()
        params.extend({"params": [param]} for param in module.parameters())

    def __call__(self, model: torch.nn.Module) -> OptimWrapper:
        model = unwrap_model(model)
        cfg = {**self.optim_wrapper_cfg, "optimizer": self.optimizer_cfg}
        if not self.paramwise_cfg or isinstance(self.optimizer_cfg, torch.optim.Optimizer):
            return _build_wrapper(cfg, model, "optim_wrapper")
        params: list[dict[str, Any]] = []
        self.add_params(params, model)
        cfg.setdefault("type", "OptimWrapper")
        optimizer = OPTIMIZERS.build(self.optimizer_cfg, params=params)
        wrapper: OptimWrapper = OPTIM_WRAPPERS.build({**cfg, "optimizer": optimizer})
        return wrapper


def build_optim_wrapper(optimizer: Any, optim_wrapper: Any, model: torch.nn.Module
                        ) -> OptimWrapperLike | None:
    """The run's optimizer wrapper from the Runner's ``optimizer=`` / ``optim_wrapper=``.

    ``optim_wrapper`` is a wrapper object, or a config such as
    ``{"type": "AmpOptimWrapper", "optimizer": {"type": "SGD", "lr": 0.1},
    "clip_grad": {"max_norm": 1.0}, "accumulative_counts": 4}`` (``type``
    defaults to ``OptimWrapper``), or, for several optimizers, a dict whose
    keys are submodules of the model and whose values are such configs
    (an :class:`OptimWrapperDict`; each optimizer gets its submodule's
    parameters) or built wrappers (MMEngine's dict of ``OptimWrapper`` objects).
    A config with ``"constructor"`` (a name in :data:`OPTIM_WRAPPER_CONSTRUCTORS`, or
    a class) is built as MMEngine builds it: ``constructor(optim_wrapper_cfg=<the
    config without constructor and paramwise_cfg>, paramwise_cfg=...)(model)``,
    which returns an ``OptimWrapper`` or an ``OptimWrapperDict``.
    ``optimizer`` alone is wrapped in a plain :class:`OptimWrapper`.
    Neither gives None (a model whose ``train_step`` needs no optimizer).

    Example::

        >>> model = torch.nn.Linear(2, 1)
        >>> build_optim_wrapper(None, {"optimizer": {"type": "SGD", "lr": 0.1},
        ...                            "accumulative_counts": 2}, model)
        OptimWrapper(optimizer=SGD, accumulative_counts=2, clip_grad=None)
    """
    if optimizer is not None and optim_wrapper is not None:
        raise ConfigError("give optimizer= or optim_wrapper= (which holds its own optimizer), "
                          "not both")
    if optim_wrapper is None:
        built = build_optimizer(optimizer, model)
        return None if built is None else OptimWrapper(built)
    if isinstance(optim_wrapper, (OptimWrapper, OptimWrapperDict)):
        return optim_wrapper
    if not isinstance(optim_wrapper, Mapping):
        raise ConfigError("optim_wrapper must be an OptimWrapper or a config dict such as "
                          "{'type': 'AmpOptimWrapper', 'optimizer': {'type': 'SGD', 'lr': 0.1}}, "
                          f"got {optim_wrapper!r}")
    cfg = dict(optim_wrapper)
    if "constructor" in cfg:
        return _constructed(cfg, model)
    kind = cfg.get("type", "OptimWrapper")
    if kind == "OptimWrapperDict" or ("type" not in cfg and "optimizer" not in cfg and cfg
                                      and all(isinstance(v, (Mapping, OptimWrapper))
                                              for v in cfg.values())):
        cfg.pop("type", None)
        return OptimWrapperDict(**{name: _wrapper_for(name, child, model)
                                   for name, child in cfg.items()})
    return _build_wrapper(cfg, model, "optim_wrapper")


def _constructor(spec: Mapping[str, Any], where: str) -> tuple[Any, dict[str, Any]]:
    """The constructor class a ``{"constructor": ...}`` config names, and the keyword
    arguments MMEngine calls it with (``optim_wrapper_cfg``, ``paramwise_cfg``)."""
    cfg = {k: v for k, v in spec.items() if k not in ("constructor", "paramwise_cfg")}
    kind = spec["constructor"]
    target = OPTIM_WRAPPER_CONSTRUCTORS.get(kind) if isinstance(kind, str) else kind
    if not callable(target):
        raise ConfigError(f"{where}.constructor must be a name registered in "
                          f"OPTIM_WRAPPER_CONSTRUCTORS or a class, got {kind!r}")
    kwargs = {"optim_wrapper_cfg": cfg, "paramwise_cfg": spec.get("paramwise_cfg")}
    label = kind if isinstance(kind, str) else getattr(kind, "__name__", repr(kind))
    check_call(target, kwargs, f"{where}: optim_wrapper constructor {label!r}")
    return target, kwargs


def check_constructor(spec: Mapping[str, Any], where: str = "optim_wrapper") -> None:
    """Check a ``{"constructor": ...}`` config without a model: the constructor is known and
    takes MMEngine's arguments; hookline's default constructor also checks the config."""
    target, kwargs = _constructor(spec, where)
    if target is DefaultOptimWrapperConstructor:
        try:
            target(**kwargs)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None


def _constructed(cfg: dict[str, Any], model: torch.nn.Module) -> OptimWrapperLike:
    target, kwargs = _constructor(cfg, "optim_wrapper")
    label = getattr(target, "__name__", repr(target))
    wrapper = target(**copy.deepcopy(kwargs))(model)  # MMEngine's copy: the config stays as given
    if not isinstance(wrapper, (OptimWrapper, OptimWrapperDict)):
        raise ConfigError(f"optim_wrapper constructor {label!r} returned "
                          f"{ConfigError.brief(wrapper)}; a constructor returns an "
                          "OptimWrapper or an OptimWrapperDict")
    return wrapper


def _wrapper_for(name: str, cfg: Any, model: torch.nn.Module) -> OptimWrapper:
    if isinstance(cfg, OptimWrapper):  # built already (MMEngine's dict of wrapper objects)
        return cfg
    part = getattr(model, name, None)
    if not isinstance(part, torch.nn.Module):
        children = [child for child, _ in model.named_children()]
        raise ConfigError(f"optim_wrapper.{name}: the model has no submodule {name!r} to "
                          f"optimize (its submodules: {', '.join(children) or 'none'})")
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"optim_wrapper.{name} must be a config dict, got {cfg!r}")
    return _build_wrapper(dict(cfg), part, f"optim_wrapper.{name}")


def _build_wrapper(cfg: dict[str, Any], model: torch.nn.Module, where: str) -> OptimWrapper:
    cfg.setdefault("type", "OptimWrapper")
    if "optimizer" not in cfg:
        raise ConfigError(f"{where} has no 'optimizer', e.g. {{'type': 'OptimWrapper', "
                          "'optimizer': {'type': 'SGD', 'lr': 0.01}}")
    optimizer = build_optimizer(cfg["optimizer"], model)
    wrapper: OptimWrapper = OPTIM_WRAPPERS.build({**cfg, "optimizer": optimizer})
    return wrapper


def build_schedulers(spec: Any, optimizer: torch.optim.Optimizer | None
                     ) -> list[tuple[Any, bool]]:
    """``(scheduler, by_epoch)`` pairs from a scheduler, a config dict, or a list of them.

    A config may hold ``by_epoch`` (default True: step once per epoch;
    False: once per iteration). ReduceLROnPlateau may hold ``monitor``
    (default ``"loss"``): the validation metric it steps on. ``SequentialLR``
    and ``ChainedScheduler`` accept ``schedulers`` as a list of configs.
    """
    if spec is None:
        return []
    items = list(spec) if isinstance(spec, Sequence) and not isinstance(spec, (str, Mapping)) \
        else [spec]
    if not items:
        return []
    if optimizer is None:
        raise ConfigError("param_scheduler needs an optimizer")
    return [_build_one(item, optimizer) for item in items]


def _build_one(item: Any, optimizer: torch.optim.Optimizer) -> tuple[Any, bool]:
    if not isinstance(item, Mapping):
        if not hasattr(item, "step"):
            raise ConfigError(f"param_scheduler entries must be schedulers or dicts, got {item!r}")
        return item, bool(getattr(item, "by_epoch", True))
    cfg = dict(item)
    by_epoch = bool(cfg.pop("by_epoch", True))
    monitor = cfg.pop("monitor", None)
    if "schedulers" in cfg:  # SequentialLR / ChainedScheduler children
        cfg["schedulers"] = [
            child if not isinstance(child, Mapping) else _build_child(child, optimizer)
            for child in cfg["schedulers"]
        ]
    kind = cfg.get("type")
    target = PARAM_SCHEDULERS.get(kind) if isinstance(kind, str) else kind
    if target is None:
        raise ConfigError(f"param_scheduler config {dict(item)!r} has no 'type'")
    kwargs = {k: v for k, v in cfg.items() if k != "type"}
    if "optimizer" in _parameters(target):
        kwargs["optimizer"] = optimizer
    refuse_mmengine_options(target, kwargs, f"param_scheduler type {kind!r}")
    check_call(target, kwargs, f"param_scheduler type {kind!r}")
    scheduler = target(**kwargs)
    if monitor is not None:
        scheduler.monitor = monitor
    return scheduler, by_epoch


def _build_child(child: Mapping[str, Any], optimizer: torch.optim.Optimizer) -> Any:
    child = {k: v for k, v in child.items() if k not in ("by_epoch", "monitor")}
    return _build_one(child, optimizer)[0]


def _parameters(target: Any) -> set[str]:
    try:
        return set(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return set()
