"""``mmcv.runner.IterTimerHook``: ``data_time`` and ``time`` into ``runner.log_buffer``.

Example::

    >>> from hookline.compat.mmcv.runner import IterTimerHook
    >>> IterTimerHook().get_triggered_stages()[:2]
    ['before_train_epoch', 'before_train_iter']
"""

from __future__ import annotations

import time
from typing import Any

from .hook import Hook


class IterTimerHook(Hook):
    """mmcv's timer: the wait for each batch and each whole iteration, in seconds."""

    def __init__(self) -> None:
        self.t = time.time()

    def before_epoch(self, runner: Any) -> None:
        self.t = time.time()

    def before_iter(self, runner: Any) -> None:
        runner.log_buffer.update({"data_time": time.time() - self.t})

    def after_iter(self, runner: Any) -> None:
        runner.log_buffer.update({"time": time.time() - self.t})
        self.t = time.time()


__all__ = ["IterTimerHook"]
