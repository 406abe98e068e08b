"""MMEngine options hookline does not port, and what to write instead.

A ported config's ``paramwise_cfg`` in ``optim_wrapper`` or a scheduler's
``convert_to_iter_based`` would otherwise be a bare "unexpected argument";
both the Runner and the config check of ``hookline.app`` say what hookline
offers instead, with the same words.

Example::

    >>> class Linear:
    ...     def __init__(self, start_factor=0.1): ...
    >>> refuse_mmengine_options(Linear, {"convert_to_iter_based": True}, "param_scheduler[0]")
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: param_scheduler[0]: MMEngine's convert_to_iter_based is ...
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch

from hookline.core import ConfigError

__all__ = ["MMENGINE_OPTIONS", "MMENGINE_SCHEDULER_ARGUMENTS", "refuse_mmengine_options"]

#: arguments of MMEngine's parameter schedulers that torch's schedulers of the same name lack
#: (a ported ``{"type": "LinearLR", "begin": 0, "end": 3}`` built without MMEngine's scope)
MMENGINE_SCHEDULER_ARGUMENTS = ("begin", "end", "by_epoch", "convert_to_iter_based",
                                "eta_min_ratio", "verbose")

#: MMEngine option name -> what to do in hookline instead
MMENGINE_OPTIONS = {
    "paramwise_cfg": "per-parameter learning rates and decay are not supported: give the "
                     "optimizer param groups yourself (in Python)",
    "convert_to_iter_based": "write the schedule in iterations (by_epoch: false, with begin/end "
                             "in iterations)",
    "save_begin": "hookline's CheckpointHook saves from the first interval on; keep fewer "
                  "files with max_keep_ckpts",
    "published_keys": "checkpoints are not published (no hash in the file name); the saved "
                      "checkpoint holds everything needed to resume",
    "backend_args": "hookline reads and writes local files only (no remote storage backends)",
    "file_client_args": "hookline reads and writes local files only (no remote storage backends)",
}


def _named(target: Any, name: str) -> bool:
    try:
        return name in inspect.signature(target).parameters
    except (TypeError, ValueError):
        return False


def _torch_scheduler(target: Any) -> bool:
    return inspect.isclass(target) and target.__module__.startswith("torch.optim") and (
        issubclass(target, torch.optim.lr_scheduler.LRScheduler)
        or target is torch.optim.lr_scheduler.ReduceLROnPlateau)


def refuse_mmengine_options(target: Any, kwargs: Mapping[str, Any], where: str) -> None:
    """One :class:`ConfigError` for an MMEngine option in ``kwargs`` that ``target`` does not
    name in its own signature (a class that takes it, e.g. a ported one, is left alone); for
    MMEngine's scheduler arguments given to torch's scheduler of that name, the error says
    how to name MMEngine's."""
    ported = [name for name in MMENGINE_SCHEDULER_ARGUMENTS
              if name in kwargs and not _named(target, name)]
    if ported and _torch_scheduler(target):
        name = target.__name__
        raise ConfigError(
            f"{where}: torch's {name} takes no {', '.join(map(repr, ported))} (MMEngine's "
            f"{name} does), and {name!r} without MMEngine's scope names torch's: write {{'type': "
            f"'mmengine.{name}', ...}}, or call init_default_scope('mmengine') (from "
            "hookline.compat.mmengine.registry) before building (docs/porting.md)")
    for name in kwargs:
        if name in MMENGINE_OPTIONS and not _named(target, name):
            raise ConfigError(f"{where}: MMEngine's {name} is not supported by hookline: "
                              f"{MMENGINE_OPTIONS[name]}")
