from typing import Optional

import torch

from hookline.compat.mmengine.hooks import Hook
from hookline.compat.mmengine.runner import Runner
from toydet.registry import HOOKS


@HOOKS.register_module()
class CheckInvalidLossHook(Hook):
    """Stops training when the loss becomes NaN or infinite (checked every ``interval``)."""

    def __init__(self, interval: int = 50) -> None:
        self.interval = interval

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Optional[dict] = None,
                         outputs: Optional[dict] = None) -> None:
        if self.every_n_train_iters(runner, self.interval):
            assert torch.isfinite(outputs['loss']), 'loss become infinite or NaN!'
