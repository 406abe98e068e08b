"""``mmengine.optim.scheduler``: MMEngine's parameter schedulers (``begin`` / ``end`` windows).

As in MMEngine, the package holds :mod:`.param_scheduler` (``_ParamScheduler``, ``INF`` and
the ``...ParamScheduler`` classes), :mod:`.lr_scheduler` (``LRSchedulerMixin`` and the
``...LR`` forms) and :mod:`.momentum_scheduler` (``MomentumSchedulerMixin`` and the
``...Momentum`` forms). They are registered, in the ``mmengine`` scope, under MMEngine's
names: ``{"type": "mmengine.LinearLR", "start_factor": 0.1, "end": 5, "by_epoch": False}``
in a Runner's ``param_scheduler`` (``by_epoch`` there says when the Runner steps it), or
with ``init_default_scope("mmengine")``.

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.optim import LinearLR, MultiStepLR
    >>> opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    >>> warmup = LinearLR(opt, start_factor=0.25, begin=0, end=4)
    >>> decay = MultiStepLR(opt, milestones=[2], gamma=0.1, begin=4)  # counted from begin
    >>> lrs = []
    >>> for _ in range(8):
    ...     lrs.append(round(opt.param_groups[0]["lr"], 4))
    ...     warmup.step(); decay.step()
    >>> lrs
    [0.25, 0.5, 0.75, 1.0, 1.0, 1.0, 0.1, 0.1]
"""

from ....unsupported import MMENGINE_SCHEDULERS, module_getattr
from .lr_scheduler import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LinearLR,
    LRSchedulerMixin,
    MultiStepLR,
    PolyLR,
    StepLR,
)
from .momentum_scheduler import (
    ConstantMomentum,
    CosineAnnealingMomentum,
    ExponentialMomentum,
    LinearMomentum,
    MomentumSchedulerMixin,
    MultiStepMomentum,
    PolyMomentum,
    StepMomentum,
)
from .param_scheduler import (
    INF,
    ConstantParamScheduler,
    CosineAnnealingParamScheduler,
    ExponentialParamScheduler,
    LinearParamScheduler,
    MultiStepParamScheduler,
    PolyParamScheduler,
    StepParamScheduler,
    _ParamScheduler,
)

__getattr__ = module_getattr(__name__, MMENGINE_SCHEDULERS)

__all__ = [
    "INF", "ConstantLR", "ConstantMomentum", "ConstantParamScheduler", "CosineAnnealingLR",
    "CosineAnnealingMomentum", "CosineAnnealingParamScheduler", "ExponentialLR",
    "ExponentialMomentum", "ExponentialParamScheduler", "LRSchedulerMixin", "LinearLR",
    "LinearMomentum", "LinearParamScheduler", "MomentumSchedulerMixin", "MultiStepLR",
    "MultiStepMomentum", "MultiStepParamScheduler", "PolyLR", "PolyMomentum",
    "PolyParamScheduler", "StepLR", "StepMomentum", "StepParamScheduler", "_ParamScheduler",
]

# the public path, as before these modules were split (pickles and reprs name it)
for _name in __all__:
    _cls = globals()[_name]
    if isinstance(_cls, type):
        _cls.__module__ = __name__
