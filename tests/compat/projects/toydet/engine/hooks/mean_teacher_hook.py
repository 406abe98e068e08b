from typing import Optional

import torch.nn as nn

from hookline.compat.mmengine.hooks import Hook
from hookline.compat.mmengine.model import is_model_wrapper
from hookline.compat.mmengine.runner import Runner
from toydet.registry import HOOKS


@HOOKS.register_module()
class MeanTeacherHook(Hook):
    """The teacher follows the student: ``teacher = (1 - m) * teacher + m * student``."""

    def __init__(self, momentum: float = 0.001, interval: int = 1, skip_buffer=True) -> None:
        assert 0 < momentum < 1
        self.momentum = momentum
        self.interval = interval
        self.skip_buffers = skip_buffer

    def before_train(self, runner: Runner) -> None:
        model = runner.model
        if is_model_wrapper(model):
            model = model.module
        assert hasattr(model, 'teacher') and hasattr(model, 'student')
        if runner.iter == 0:
            self.momentum_update(model, 1)

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Optional[dict] = None,
                         outputs: Optional[dict] = None) -> None:
        if (runner.iter + 1) % self.interval != 0:
            return
        model = runner.model
        if is_model_wrapper(model):
            model = model.module
        self.momentum_update(model, self.momentum)

    def momentum_update(self, model: nn.Module, momentum: float) -> None:
        for src, dst in zip(model.student.parameters(), model.teacher.parameters()):
            dst.data.mul_(1 - momentum).add_(src.data, alpha=momentum)
