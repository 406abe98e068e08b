"""IterTimerHook: ``time`` (whole iteration) and ``data_time`` (waiting for the batch).

Example::

    >>> from hookline.hooks import IterTimerHook
    >>> "before_train_iter" in IterTimerHook().triggered_stages()
    True
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


@HOOKS.register()
class IterTimerHook(Hook):
    """Records ``{mode}/time`` and ``{mode}/data_time`` in seconds (host wall clock,
    no device sync) into ``runner.message_hub`` for the loggers, in training,
    validation and test loops.

    ``data_time`` is the wait from the end of the previous iteration (or the
    start of the epoch) until the batch is on the device; ``time`` is the whole
    iteration up to this hook's ``after_*_iter``. Work queued on a GPU is not
    waited for, so a single ``time`` can be short, but averaged over a log
    interval it is the real pace. Stateless: nothing to checkpoint.

    Example::

        >>> from hookline import HOOKS
        >>> HOOKS.build({"type": "IterTimerHook"}).priority
        'NORMAL'
    """

    priority = "NORMAL"

    def __init__(self) -> None:
        self._last = time.perf_counter()

    def _before_epoch(self, runner: Runner, mode: str = "train") -> None:
        self._last = time.perf_counter()

    def _before_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                     mode: str = "train") -> None:
        runner.message_hub.update(f"{mode}/data_time", time.perf_counter() - self._last)

    def _after_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None, outputs: Any = None,
                    mode: str = "train") -> None:
        now = time.perf_counter()
        runner.message_hub.update(f"{mode}/time", now - self._last)
        self._last = now
