"""``mmengine.optim.scheduler.momentum_scheduler``: ``MomentumSchedulerMixin`` and the
``...Momentum`` schedulers.

``MomentumSchedulerMixin`` turns a :class:`~.param_scheduler._ParamScheduler` subclass into
one on ``momentum`` (SGD's ``momentum``, or ``betas[0]`` of the Adam family, mirrored in the
group's ``momentum`` as MMEngine does): ``Mixin(optimizer, *args, **kwargs)`` is
``Base(optimizer, "momentum", *args, **kwargs)``. ``LinearMomentum`` is
``class LinearMomentum(MomentumSchedulerMixin, LinearParamScheduler)``; a project's scheduler
is made the same way.

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.optim.scheduler.momentum_scheduler import StepMomentum
    >>> opt = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], betas=(0.9, 0.999))
    >>> scheduler = StepMomentum(opt, step_size=1, gamma=0.5)
    >>> scheduler.step()
    >>> opt.param_groups[0]["betas"]
    (0.45, 0.999)
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


class MomentumSchedulerMixin:
    """Schedule ``momentum``: put it first before the ``_ParamScheduler`` subclass in the bases.

    As MMEngine's, for the Adam family (``betas``, no ``momentum``) it keeps ``betas[0]`` in
    each group's ``momentum`` too, so a project's ``_get_value`` may read
    ``group[self.param_name]``, and writes it back to ``betas`` after every step. An optimizer
    with neither is a ``ConfigError``.
    """

    def __init__(self, optimizer: Any, *args: Any, **kwargs: Any) -> None:
        groups = list(getattr(optimizer, "param_groups", None) or [])
        self.use_betas = bool(groups) and all("momentum" not in g and "betas" in g
                                              for g in groups)
        for group in groups if self.use_betas else []:
            group["momentum"] = group["betas"][0]
        super().__init__(optimizer, "momentum", *args, **kwargs)  # type: ignore[call-arg]

    def step(self) -> None:
        """The scheduler's step, then ``betas[0]`` from ``momentum`` (the Adam family)."""
        super().step()  # type: ignore[misc]
        if self.use_betas:
            for group in self.optimizer.param_groups:  # type: ignore[attr-defined]
                group["betas"] = (group["momentum"], *tuple(group["betas"])[1:])


class ConstantMomentum(MomentumSchedulerMixin, ConstantParamScheduler):
    """``ConstantParamScheduler`` on ``momentum``."""


class CosineAnnealingMomentum(MomentumSchedulerMixin, CosineAnnealingParamScheduler):
    """``CosineAnnealingParamScheduler`` on ``momentum``."""


class ExponentialMomentum(MomentumSchedulerMixin, ExponentialParamScheduler):
    """``ExponentialParamScheduler`` on ``momentum``."""


class LinearMomentum(MomentumSchedulerMixin, LinearParamScheduler):
    """``LinearParamScheduler`` on ``momentum``."""


class MultiStepMomentum(MomentumSchedulerMixin, MultiStepParamScheduler):
    """``MultiStepParamScheduler`` on ``momentum``."""


class StepMomentum(MomentumSchedulerMixin, StepParamScheduler):
    """``StepParamScheduler`` on ``momentum``."""


class PolyMomentum(MomentumSchedulerMixin, PolyParamScheduler):
    """``PolyParamScheduler`` on ``momentum``."""


_MOMENTUM = (ConstantMomentum, CosineAnnealingMomentum, ExponentialMomentum, LinearMomentum,
             MultiStepMomentum, StepMomentum, PolyMomentum)
PARAM_SCHEDULERS.add_builtins({cls.__name__: cls for cls in _MOMENTUM})
__getattr__ = module_getattr(__name__, MMENGINE_SCHEDULERS)

__all__ = ["ConstantMomentum", "CosineAnnealingMomentum", "ExponentialMomentum",
           "LinearMomentum", "MomentumSchedulerMixin", "MultiStepMomentum", "PolyMomentum",
           "StepMomentum"]
