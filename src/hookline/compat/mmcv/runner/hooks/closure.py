"""``mmcv.runner.ClosureHook``: a function as the method of one stage.

Example::

    >>> from hookline.compat.mmcv.runner import ClosureHook
    >>> ClosureHook("after_train_epoch", lambda runner: None).get_triggered_stages()
    ['after_train_epoch']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookline.core import ConfigError

from .hook import MMCV_GENERIC, Hook


class ClosureHook(Hook):
    """``ClosureHook(fn_name, fn)``: ``fn(runner)`` runs as the hook's ``fn_name`` method
    (a stage such as ``after_train_iter``, or a generic one such as ``after_iter``)."""

    def __init__(self, fn_name: str, fn: Callable[..., Any]) -> None:
        if not hasattr(self, fn_name) or (fn_name not in self.stages
                                          and fn_name not in MMCV_GENERIC):
            raise ConfigError(f"ClosureHook fn_name must be an mmcv stage or generic method "
                              f"({', '.join(self.stages)}; {', '.join(MMCV_GENERIC)}), "
                              f"got {fn_name!r}")
        if not callable(fn):
            raise ConfigError(f"ClosureHook fn must be callable, got {fn!r}")
        setattr(self, fn_name, fn)


__all__ = ["ClosureHook"]
