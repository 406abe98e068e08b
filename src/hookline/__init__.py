"""hookline: hooks for Python and PyTorch.

``import hookline.core`` gives the generic, pure-Python hook machinery.
The training layer (``Runner``, ``Hook``, ``HOOKS``) and the inspection
tools import torch, so they load lazily on first attribute access::

    >>> import hookline.core          # no torch imported
    >>> from hookline.core import Event
"""

from __future__ import annotations

import importlib
from typing import Any

from hookline.core.version import __version__

# name -> module that defines it; loaded on first access (PEP 562) so that
# ``import hookline.core`` never pulls in torch.
_LAZY = {
    "Priority": "hookline.core",
    "HookHandle": "hookline.core",
    "HandleGroup": "hookline.core",
    "Event": "hookline.core",
    "EventBus": "hookline.core",
    "hookable": "hookline.core",
    "Skip": "hookline.core",
    "observed": "hookline.core",
    "observe": "hookline.core",
    "Registry": "hookline.core",
    "HookError": "hookline.core",
    "ConfigError": "hookline.core",
    "Hook": "hookline.engine",
    "Runner": "hookline.engine",
    "HOOKS": "hookline.engine",
    "MODELS": "hookline.engine",
    "METRICS": "hookline.engine",
    "DATASETS": "hookline.engine",
    "CheckpointError": "hookline.engine",
    "TrainingInterrupted": "hookline.engine",
    "MessageHub": "hookline.engine",
    "OptimWrapper": "hookline.engine",
    "AmpOptimWrapper": "hookline.engine",
    "OptimWrapperDict": "hookline.engine",
    "LOOPS": "hookline.engine",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hookline' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
