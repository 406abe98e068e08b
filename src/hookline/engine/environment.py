"""The process a run lives in: seeds, the device, and tearing down at exit.

Example::

    >>> from hookline.engine.environment import resolve_device, seed_everything
    >>> seed_everything(0); resolve_device("cpu")
    device(type='cpu')
"""

from __future__ import annotations

import atexit
import gc
import random
import weakref
from typing import TYPE_CHECKING

import numpy as np
import torch

from hookline.core import ConfigError

from . import distributed

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _shutdown_distributed(runner_ref: weakref.ref[Runner]) -> None:
    """At exit, while the interpreter is still whole: free the DDP wrapper (its reducer holds
    gloo work objects whose destruction at interpreter teardown aborts the process), then
    destroy the process group this process created."""
    runner = runner_ref()
    if runner is not None:
        runner.release_ddp()
    gc.collect()
    distributed.destroy()


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a device."""
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ConfigError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}") \
            from exc


def destroy_at_exit(runner: Runner) -> None:
    """Tear down the process group this process created when it exits, DDP wrapper first."""
    atexit.register(_shutdown_distributed, weakref.ref(runner))
