import math
from typing import Optional

import torch
import torch.nn as nn
from torch import Tensor

from hookline.compat.mmengine.model import ExponentialMovingAverage
from toypose.registry import MODELS


@MODELS.register_module()
class ExpMomentumEMA(ExponentialMovingAverage):
    """EMA whose momentum decays exponentially from 1 to ``momentum`` (YOLOX's)."""

    def __init__(self, model: nn.Module, momentum: float = 0.0002, gamma: int = 2000,
                 interval=1, device: Optional[torch.device] = None,
                 update_buffers: bool = False) -> None:
        super().__init__(model=model, momentum=momentum, interval=interval, device=device,
                         update_buffers=update_buffers)
        assert gamma > 0, f'gamma must be greater than 0, but got {gamma}'
        self.gamma = gamma

    def avg_func(self, averaged_param: Tensor, source_param: Tensor, steps: int) -> None:
        momentum = (1 - self.momentum) * math.exp(-float(1 + steps) / self.gamma) + self.momentum
        averaged_param.mul_(1 - momentum).add_(source_param, alpha=momentum)
