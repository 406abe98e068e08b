"""ProgressBarHook: a tqdm bar over training iterations, on an interactive terminal.

Example::

    >>> from hookline.hooks import ProgressBarHook
    >>> ProgressBarHook(enabled=False).enabled
    False
"""

from __future__ import annotations

import sys
from typing import Any

from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS


@HOOKS.register()
class ProgressBarHook(Hook):
    """Shows a tqdm bar on the main process.

    Args:
        enabled: None (default) shows it only when stderr is a terminal; True
            always; False never.
        interval: iterations between updates of the loss shown on the bar
            (each update reads the loss: one host sync).
    """

    priority = "LOW"

    def __init__(self, enabled: bool | None = None, interval: int = 10) -> None:
        self.enabled = enabled
        self.interval = interval
        self._bar: Any = None

    def before_train(self, runner) -> None:
        show = self.enabled if self.enabled is not None else sys.stderr.isatty()
        if not show or not runner.is_main_process:
            return
        from tqdm.auto import tqdm

        total = runner.max_iters if runner.max_iters is not None else \
            runner.max_epochs * len(runner.train_dataloader)
        self._bar = tqdm(total=total, initial=runner.iter, desc="train", unit="it",
                         dynamic_ncols=True, leave=False)

    def after_train_iter(self, runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        bar = self._bar
        if bar is None:
            return
        bar.update(1)
        if (runner.iter + 1) % self.interval == 0 and "train/loss" in runner.message_hub:
            bar.set_postfix(loss=f"{runner.message_hub.latest('train/loss'):.4f}", refresh=False)

    def after_train(self, runner) -> None:
        self._close()

    def on_exception(self, runner, exception: BaseException) -> None:
        self._close()

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
