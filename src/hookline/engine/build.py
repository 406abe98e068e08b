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

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.core.registry import check_call

from .amp_optim_wrapper import AmpOptimWrapper
from .optim_wrapper import OptimWrapper, OptimWrapperLike
from .optim_wrapper_dict import OptimWrapperDict
from .registries import OPTIM_WRAPPERS, OPTIMIZERS, PARAM_SCHEDULERS

__all__ = ["AmpOptimWrapper", "build_optim_wrapper", "build_optimizer", "build_schedulers"]


def build_optimizer(spec: Any, model: torch.nn.Module) -> torch.optim.Optimizer | None:
    """A torch optimizer, or a dict naming any ``torch.optim`` class (``{"type": "SGD", "lr": 0.1}``)."""
    if spec is None or isinstance(spec, torch.optim.Optimizer):
        return spec
    if not isinstance(spec, Mapping):
        raise ConfigError(f"optimizer must be a torch.optim.Optimizer or a config dict, got {spec!r}")
    optimizer: torch.optim.Optimizer = OPTIMIZERS.build(
        spec, params=[p for p in model.parameters() if p.requires_grad])
    return optimizer


def build_optim_wrapper(optimizer: Any, optim_wrapper: Any, model: torch.nn.Module
                        ) -> OptimWrapperLike | None:
    """The run's optimizer wrapper from the Runner's ``optimizer=`` / ``optim_wrapper=``.

    ``optim_wrapper`` is a wrapper object, or a config such as
    ``{"type": "AmpOptimWrapper", "optimizer": {"type": "SGD", "lr": 0.1},
    "clip_grad": {"max_norm": 1.0}, "accumulative_counts": 4}`` (``type``
    defaults to ``OptimWrapper``), or, for several optimizers, a dict whose
    keys are submodules of the model and whose values are such configs
    (an :class:`OptimWrapperDict`; each optimizer gets its submodule's
    parameters). ``optimizer`` alone is wrapped in a plain :class:`OptimWrapper`.
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
    kind = cfg.get("type", "OptimWrapper")
    if kind == "OptimWrapperDict" or ("type" not in cfg and "optimizer" not in cfg and cfg
                                      and all(isinstance(v, Mapping) for v in cfg.values())):
        cfg.pop("type", None)
        return OptimWrapperDict(**{name: _wrapper_for(name, child, model)
                                   for name, child in cfg.items()})
    return _build_wrapper(cfg, model, "optim_wrapper")


def _wrapper_for(name: str, cfg: Any, model: torch.nn.Module) -> OptimWrapper:
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
