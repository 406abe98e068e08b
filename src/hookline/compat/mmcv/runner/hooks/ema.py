"""``mmcv.runner.EMAHook``: mmcv 1.x's EMA of the parameters, kept as model buffers.

``EMAHook(momentum=0.0002, interval=1, warm_up=100, resume_from=None)``:
each parameter gets an ``ema_<name>`` buffer on the model (so checkpoints
carry the averages), updated every ``interval`` iterations with
``momentum = min(momentum ** interval, (1 + step) / (warm_up + step))``. The
averages are swapped into the model at the end of each training epoch (the
validation that follows, and the epoch's checkpoint, see them) and swapped
back at the start of the next, as in mmcv. Subclasses find mmcv's attributes
(``momentum``, ``interval``, ``warm_up``, ``checkpoint``, ``param_ema_buffer``,
``model_parameters``, ``model_buffers``).

Example::

    >>> from hookline.compat.mmcv.runner import EMAHook
    >>> hook = EMAHook(momentum=0.1, interval=2)
    >>> round(hook.momentum, 4), hook.get_triggered_stages()
    (0.01, ['before_run', 'before_train_epoch', 'after_train_iter', 'after_train_epoch'])
"""

from __future__ import annotations

from typing import Any

import torch

from hookline.core import ConfigError

from ...parallel import is_module_wrapper
from .hook import Hook


class EMAHook(Hook):
    """See the module docstring."""

    def __init__(self, momentum: float = 0.0002, interval: int = 1, warm_up: int = 100,
                 resume_from: str | None = None) -> None:
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise ConfigError(f"EMAHook interval must be an int >= 1, got {interval!r}")
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) \
                or not 0 < momentum < 1:
            raise ConfigError(f"EMAHook momentum must be in (0, 1), got {momentum!r}")
        self.warm_up = warm_up
        self.interval = interval
        self.momentum = momentum ** interval
        self.checkpoint = resume_from
        self.param_ema_buffer: dict[str, str] = {}
        self.model_parameters: dict[str, torch.nn.Parameter] = {}
        self.model_buffers: dict[str, torch.Tensor] = {}

    def before_run(self, runner: Any) -> None:
        model = runner.model
        if is_module_wrapper(model):
            model = model.module
        self.param_ema_buffer = {}
        self.model_parameters = dict(model.named_parameters(recurse=True))
        for name, value in self.model_parameters.items():
            buffer_name = f"ema_{name.replace('.', '_')}"
            self.param_ema_buffer[name] = buffer_name
            model.register_buffer(buffer_name, value.data.clone())
        self.model_buffers = dict(model.named_buffers(recurse=True))
        if self.checkpoint is not None:
            runner.resume(self.checkpoint)

    @torch.no_grad()
    def after_train_iter(self, runner: Any) -> None:
        step = runner.iter
        momentum = min(self.momentum, (1 + step) / (self.warm_up + step))
        if step % self.interval != 0:
            return
        for name, parameter in self.model_parameters.items():
            average = self.model_buffers[self.param_ema_buffer[name]]
            average.mul_(1 - momentum).add_(parameter.data, alpha=momentum)

    def after_train_epoch(self, runner: Any) -> None:
        self._swap_ema_parameters()

    def before_train_epoch(self, runner: Any) -> None:
        self._swap_ema_parameters()

    @torch.no_grad()
    def _swap_ema_parameters(self) -> None:
        for name, value in self.model_parameters.items():
            kept = value.data.clone()
            average = self.model_buffers[self.param_ema_buffer[name]]
            value.data.copy_(average.data)
            average.data.copy_(kept)


__all__ = ["EMAHook"]
