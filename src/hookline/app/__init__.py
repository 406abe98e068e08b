"""hookline.app: the assembly layer, the only place that knows engine, hooks, inspect and demo.

It holds config files (load, override, validate, build a Runner), the
built-in registrations and the ``hookline train`` / ``hookline hooks``
commands. Nothing in hookline imports it except the CLI.

Example::

    >>> import tempfile
    >>> from hookline.app import build_runner
    >>> cfg = {"model": {"type": "DigitsCNN"}, "loss_fn": {"type": "CrossEntropyLoss"},
    ...        "optimizer": {"type": "Adam", "lr": 0.003}, "max_epochs": 1,
    ...        "train_dataloader": {"dataset": {"type": "DigitsDataset"}, "batch_size": 32}}
    >>> build_runner(cfg, work_dir=tempfile.mkdtemp()).max_epochs
    1
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> submodule; imported on first use, so that a command that needs no torch (``hookline
# docs``) does not pay for it when it imports hookline.app.docs_command
_EXPORTS = {"apply_overrides": "config", "build_runner": "config", "load_config": "config",
            "resolve_config": "config", "save_config": "config", "register_builtins": "defaults"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'hookline.app' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
