"""``mmengine.optim.scheduler.lr_scheduler``: ``LRSchedulerMixin`` and the ``...LR`` schedulers.

``LRSchedulerMixin`` turns a :class:`~.param_scheduler._ParamScheduler` subclass into one on
``lr``: it passes ``param_name="lr"`` on, so ``Mixin(optimizer, *args, **kwargs)`` is
``Base(optimizer, "lr", *args, **kwargs)``. ``LinearLR`` is
``class LinearLR(LRSchedulerMixin, LinearParamScheduler)``, and a project's scheduler is
made the same way (mmdet's ``QuadraticWarmupLR``).

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.optim.scheduler.lr_scheduler import LRSchedulerMixin
    >>> from hookline.compat.mmengine.optim.scheduler.param_scheduler import _ParamScheduler
    >>> class HalvingParamScheduler(_ParamScheduler):
    ...     def _get_value(self):
    ...         return [v if self.last_step == 0 else v / 2 for v in self._current()]
    >>> class HalvingLR(LRSchedulerMixin, HalvingParamScheduler):
    ...     pass
    >>> opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    >>> scheduler = HalvingLR(opt, end=3)
    >>> for _ in range(4):
    ...     scheduler.step()
    >>> opt.param_groups[0]["lr"]
    0.25
"""

from __future__ import annotations

from typing import Any

from ....unsupported import MMENGINE_SCHEDULERS, module_getattr
from ...registry import PARAM_SCHEDULERS
from .param_scheduler import (
    ConstantParamScheduler,
    CosineAnnealingParamScheduler,
    ExponentialParamScheduler,
    LinearParamScheduler,
    MultiStepParamScheduler,
    PolyParamScheduler,
    StepParamScheduler,
)


class LRSchedulerMixin:
    """Schedule ``lr``: put it first before the ``_ParamScheduler`` subclass in the bases."""

    def __init__(self, optimizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(optimizer, "lr", *args, **kwargs)  # type: ignore[call-arg]


class ConstantLR(LRSchedulerMixin, ConstantParamScheduler):
    """``ConstantParamScheduler`` on ``lr``."""


class CosineAnnealingLR(LRSchedulerMixin, CosineAnnealingParamScheduler):
    """``CosineAnnealingParamScheduler`` on ``lr``."""


class ExponentialLR(LRSchedulerMixin, ExponentialParamScheduler):
    """``ExponentialParamScheduler`` on ``lr``."""


class LinearLR(LRSchedulerMixin, LinearParamScheduler):
    """``LinearParamScheduler`` on ``lr``."""


class MultiStepLR(LRSchedulerMixin, MultiStepParamScheduler):
    """``MultiStepParamScheduler`` on ``lr``."""


class StepLR(LRSchedulerMixin, StepParamScheduler):
    """``StepParamScheduler`` on ``lr``."""


class PolyLR(LRSchedulerMixin, PolyParamScheduler):
    """``PolyParamScheduler`` on ``lr``."""


_LR = (ConstantLR, CosineAnnealingLR, ExponentialLR, LinearLR, MultiStepLR, StepLR, PolyLR)
PARAM_SCHEDULERS.add_builtins({cls.__name__: cls for cls in _LR})
__getattr__ = module_getattr(__name__, MMENGINE_SCHEDULERS)

__all__ = ["ConstantLR", "CosineAnnealingLR", "ExponentialLR", "LRSchedulerMixin", "LinearLR",
           "MultiStepLR", "PolyLR", "StepLR"]
