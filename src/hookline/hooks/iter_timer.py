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
    interval it is the real pace. Nothing to checkpoint.

    Its state has MMEngine's names, so a subclass that overrides
    ``_before_iter`` / ``_after_iter`` (mmagic's IterTimerHook) works: ``t``
    (``time.time()`` when the last iteration ended, or the epoch began),
    ``start_iter`` (``runner.iter`` when training began, after a resume too),
    ``time_sec_tot`` and ``time_sec_test_val`` (0 here: the loggers compute
    the ETA; a subclass may accumulate into them).

    Example::

        >>> from hookline import HOOKS
        >>> HOOKS.build({"type": "IterTimerHook"}).priority
        'NORMAL'
    """

    priority = "NORMAL"

    def __init__(self) -> None:
        self.t = time.time()
        self.time_sec_tot = 0.0
        self.time_sec_test_val = 0.0
        self.start_iter = 0

    def before_train(self, runner: Runner) -> None:
        self.start_iter = runner.iter

    def _before_epoch(self, runner: Runner, mode: str = "train") -> None:
        self.t = time.time()

    def _before_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                     mode: str = "train") -> None:
        runner.message_hub.update(f"{mode}/data_time", time.time() - self.t)

    def _after_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None, outputs: Any = None,
                    mode: str = "train") -> None:
        now = time.time()
        runner.message_hub.update(f"{mode}/time", now - self.t)
        self.t = now
