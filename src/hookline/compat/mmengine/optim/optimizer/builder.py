"""``mmengine.optim.optimizer.builder``: ``build_optim_wrapper(model, cfg)``, as MMEngine
builds it, and the registries it builds from.

A project's constructor registered in ``OPTIM_WRAPPER_CONSTRUCTORS`` (mmagic's
``MultiOptimWrapperConstructor``) is found by name, by :func:`build_optim_wrapper` and by a
Runner's ``optim_wrapper={"constructor": ...}`` alike.

Example::

    >>> import torch
    >>> wrapper = build_optim_wrapper(torch.nn.Linear(2, 1),
    ...                               {"optimizer": {"type": "SGD", "lr": 0.1}})
    >>> type(wrapper).__name__, wrapper.get_lr()
    ('OptimWrapper', {'lr': [0.1]})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.engine.optim_wrapper import OptimWrapper
from hookline.engine.optim_wrapper_dict import OptimWrapperDict

from ....unsupported import MMENGINE_OPTIM, module_getattr, refusal
from ...registry import OPTIM_WRAPPER_CONSTRUCTORS, OPTIM_WRAPPERS, OPTIMIZERS

__all__ = ["OPTIMIZERS", "OPTIM_WRAPPER_CONSTRUCTORS", "build_optim_wrapper"]

# a config naming one of these is one ConfigError saying what to use instead
OPTIM_WRAPPERS.add_builtins({name: refusal(name, MMENGINE_OPTIM[name])
                             for name in ("ApexOptimWrapper", "DeepSpeedOptimWrapper")})
OPTIMIZERS.add_builtins({"ZeroRedundancyOptimizer": refusal(
    "ZeroRedundancyOptimizer", MMENGINE_OPTIM["ZeroRedundancyOptimizer"])})


def build_optim_wrapper(model: torch.nn.Module, cfg: Mapping[str, Any]
                        ) -> OptimWrapper | OptimWrapperDict:
    """MMEngine's ``build_optim_wrapper``: ``cfg["constructor"]`` (default
    ``"DefaultOptimWrapperConstructor"``) built from ``OPTIM_WRAPPER_CONSTRUCTORS`` with
    ``optim_wrapper_cfg`` (the rest of ``cfg``, without ``paramwise_cfg``) and
    ``paramwise_cfg``, then called with ``model``."""
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"build_optim_wrapper: cfg must be a dict, got {cfg!r}")
    optim_wrapper_cfg = dict(cfg)
    constructor = optim_wrapper_cfg.pop("constructor", "DefaultOptimWrapperConstructor")
    paramwise_cfg = optim_wrapper_cfg.pop("paramwise_cfg", None)
    build = OPTIM_WRAPPER_CONSTRUCTORS.build({"type": constructor,
                                              "optim_wrapper_cfg": optim_wrapper_cfg,
                                              "paramwise_cfg": paramwise_cfg})
    wrapper: OptimWrapper | OptimWrapperDict = build(model)
    return wrapper


__getattr__ = module_getattr(__name__, MMENGINE_OPTIM)
