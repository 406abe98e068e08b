"""``mmengine.model.averaged_model``: weight averages MMEngine's ``EMAHook`` builds.

``ExponentialMovingAverage`` uses MMEngine's convention: ``momentum`` is the
weight of the *new* value, ``ema = (1 - momentum) * ema + momentum * x``
(0.0002 by default), the opposite of a "decay" of 0.9998.

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.model import ExponentialMovingAverage
    >>> net = torch.nn.Linear(1, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = net.weight.fill_(1.0)
    >>> ema = ExponentialMovingAverage(net, momentum=0.5)
    >>> ema.update_parameters(net)                  # the first update copies
    >>> with torch.no_grad():
    ...     _ = net.weight.fill_(3.0)
    >>> ema.update_parameters(net)
    >>> ema.module.weight.item(), int(ema.steps)
    (2.0, 2)
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import torch
from torch import Tensor

from hookline.core import ConfigError

from ..logging import print_log
from ..registry import MODELS


class BaseAveragedModel(torch.nn.Module):
    """A frozen copy of ``model`` whose weights ``update_parameters`` averages with
    :meth:`avg_func`; updates happen every ``interval`` steps (the first one copies).

    ``steps`` is a buffer (it is saved); the count is mirrored on the host so that
    updating never waits for the device.
    """

    steps: Tensor

    def __init__(self, model: torch.nn.Module, interval: int = 1,
                 device: torch.device | str | None = None, update_buffers: bool = False) -> None:
        super().__init__()
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise ConfigError(f"{type(self).__name__} interval must be an int >= 1, got {interval!r}")
        self.module = copy.deepcopy(model).requires_grad_(False)
        if device is not None:
            self.module = self.module.to(device)
        self.interval = interval
        self.update_buffers = update_buffers
        self.register_buffer("steps", torch.tensor(0, dtype=torch.long, device=device))
        self._host_steps: int | None = 0
        self.avg_parameters: dict[str, Tensor] = (
            self.module.state_dict() if update_buffers else dict(self.module.named_parameters()))

    def avg_func(self, averaged_param: Tensor, source_param: Tensor, steps: Tensor) -> None:
        """Average ``source_param`` into ``averaged_param`` in place (subclasses define it)."""
        raise NotImplementedError(f"{type(self).__name__} must define avg_func")

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        super()._load_from_state_dict(*args, **kwargs)
        self._host_steps = None  # read the loaded count once, when next needed

    @torch.no_grad()
    def update_parameters(self, model: torch.nn.Module) -> None:
        """One averaging step towards ``model``."""
        source = model.state_dict() if self.update_buffers else dict(model.named_parameters())
        steps = self._host_steps if self._host_steps is not None else int(self.steps.item())
        if steps == 0:
            for name, averaged in self.avg_parameters.items():
                averaged.data.copy_(source[name].data)
        elif steps % self.interval == 0:
            for name, averaged in self.avg_parameters.items():
                if averaged.dtype.is_floating_point:
                    self.avg_func(averaged.data, source[name].data.to(averaged.device), self.steps)
        if not self.update_buffers:
            for mine, theirs in zip(self.module.buffers(), model.buffers()):
                mine.data.copy_(theirs.data.to(mine.device))
        self.steps += 1
        self._host_steps = steps + 1


class ExponentialMovingAverage(BaseAveragedModel):
    """``ema = (1 - momentum) * ema + momentum * x`` (``momentum`` in (0, 1); MMEngine's
    convention: small values, 0.0002 by default)."""

    def __init__(self, model: torch.nn.Module, momentum: float = 0.0002, interval: int = 1,
                 device: torch.device | str | None = None, update_buffers: bool = False) -> None:
        super().__init__(model, interval, device, update_buffers)
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) \
                or not 0.0 < momentum < 1.0:
            raise ConfigError(f"{type(self).__name__} momentum must be in (0, 1), got {momentum!r}")
        if momentum > 0.5:
            print_log(f"EMA momentum {momentum} is the weight of the new value (MMEngine's "
                      "convention, usually small): check it is not a decay", logger="current",
                      level=logging.WARNING)
        self.momentum = float(momentum)

    def avg_func(self, averaged_param: Tensor, source_param: Tensor, steps: Tensor) -> None:
        averaged_param.lerp_(source_param, self.momentum)


class MomentumAnnealingEMA(ExponentialMovingAverage):
    """EMA whose momentum starts large: ``max(momentum, gamma / (gamma + steps))``."""

    def __init__(self, model: torch.nn.Module, momentum: float = 0.0002, gamma: int = 100,
                 interval: int = 1, device: torch.device | str | None = None,
                 update_buffers: bool = False) -> None:
        super().__init__(model, momentum=momentum, interval=interval, device=device,
                         update_buffers=update_buffers)
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or gamma <= 0:
            raise ConfigError(f"MomentumAnnealingEMA gamma must be > 0, got {gamma!r}")
        self.gamma = gamma

    def avg_func(self, averaged_param: Tensor, source_param: Tensor, steps: Tensor) -> None:
        done = self._host_steps if self._host_steps is not None else int(steps.item())
        averaged_param.lerp_(source_param, max(self.momentum, self.gamma / (self.gamma + done)))


class StochasticWeightAverage(BaseAveragedModel):
    """The running mean of the weights seen every ``interval`` steps (SWA)."""

    def avg_func(self, averaged_param: Tensor, source_param: Tensor, steps: Tensor) -> None:
        done = self._host_steps if self._host_steps is not None else int(steps.item())
        averaged_param.add_(source_param - averaged_param,
                            alpha=1.0 / float(done // self.interval + 1))


# built-ins of the MMEngine scope: a ported file may register these names again
MODELS.add_builtins({cls.__name__: cls for cls in (
    ExponentialMovingAverage, MomentumAnnealingEMA, StochasticWeightAverage)})

__all__ = ["BaseAveragedModel", "ExponentialMovingAverage", "MomentumAnnealingEMA",
           "StochasticWeightAverage"]
