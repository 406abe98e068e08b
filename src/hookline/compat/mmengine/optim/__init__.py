"""``mmengine.optim``: the optimizer wrappers (hookline's) and MMEngine's parameter schedulers
(:mod:`.scheduler`).

Example::

    >>> from hookline.compat.mmengine.optim import OptimWrapper
    >>> import hookline
    >>> OptimWrapper is hookline.OptimWrapper
    True
"""

from hookline.engine.amp_optim_wrapper import AmpOptimWrapper
from hookline.engine.optim_wrapper import OptimWrapper
from hookline.engine.optim_wrapper_dict import OptimWrapperDict

from ...unsupported import MMENGINE_SCHEDULERS, module_getattr
from .scheduler import (
    INF,
    ConstantLR,
    ConstantMomentum,
    ConstantParamScheduler,
    CosineAnnealingLR,
    CosineAnnealingMomentum,
    CosineAnnealingParamScheduler,
    ExponentialLR,
    ExponentialMomentum,
    ExponentialParamScheduler,
    LinearLR,
    LinearMomentum,
    LinearParamScheduler,
    MultiStepLR,
    MultiStepMomentum,
    MultiStepParamScheduler,
    PolyLR,
    PolyMomentum,
    PolyParamScheduler,
    StepLR,
    StepMomentum,
    StepParamScheduler,
    _ParamScheduler,
)

__getattr__ = module_getattr(__name__, MMENGINE_SCHEDULERS)

__all__ = [
    "INF", "AmpOptimWrapper", "ConstantLR", "ConstantMomentum", "ConstantParamScheduler",
    "CosineAnnealingLR", "CosineAnnealingMomentum", "CosineAnnealingParamScheduler",
    "ExponentialLR", "ExponentialMomentum", "ExponentialParamScheduler", "LinearLR",
    "LinearMomentum", "LinearParamScheduler", "MultiStepLR", "MultiStepMomentum",
    "MultiStepParamScheduler", "OptimWrapper", "OptimWrapperDict", "PolyLR", "PolyMomentum",
    "PolyParamScheduler", "StepLR", "StepMomentum", "StepParamScheduler", "_ParamScheduler",
]
