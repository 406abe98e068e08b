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

from hookline.core import ConfigError

__all__ = ["MMENGINE_OPTIONS", "refuse_mmengine_options"]

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


def refuse_mmengine_options(target: Any, kwargs: Mapping[str, Any], where: str) -> None:
    """One :class:`ConfigError` for an MMEngine option in ``kwargs`` that ``target`` does not
    name in its own signature (a class that takes it, e.g. a ported one, is left alone)."""
    for name in kwargs:
        if name in MMENGINE_OPTIONS and not _named(target, name):
            raise ConfigError(f"{where}: MMEngine's {name} is not supported by hookline: "
                              f"{MMENGINE_OPTIONS[name]}")
