"""``mmengine.optim``: the optimizer wrappers (hookline's), their constructors and
``build_optim_wrapper`` (:mod:`.optimizer`), and MMEngine's parameter schedulers
(:mod:`.scheduler`), in packages laid out as MMEngine's.

Example::

    >>> from hookline.compat.mmengine.optim import OptimWrapper
    >>> import hookline
    >>> OptimWrapper is hookline.OptimWrapper
    True
"""

from ...unsupported import MMENGINE_OPTIM, MMENGINE_SCHEDULERS, module_getattr
from .optimizer import (
    OPTIM_WRAPPER_CONSTRUCTORS,
    OPTIMIZERS,
    AmpOptimWrapper,
    DefaultOptimWrapperConstructor,
    OptimWrapper,
    OptimWrapperDict,
    build_optim_wrapper,
)
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

__getattr__ = module_getattr(__name__, {**MMENGINE_SCHEDULERS, **MMENGINE_OPTIM})

__all__ = [
    "INF", "OPTIMIZERS", "OPTIM_WRAPPER_CONSTRUCTORS", "AmpOptimWrapper", "ConstantLR",
    "ConstantMomentum", "ConstantParamScheduler",
    "CosineAnnealingLR", "CosineAnnealingMomentum", "CosineAnnealingParamScheduler",
    "DefaultOptimWrapperConstructor", "ExponentialLR", "ExponentialMomentum",
    "ExponentialParamScheduler", "LinearLR",
    "LinearMomentum", "LinearParamScheduler", "MultiStepLR", "MultiStepMomentum",
    "MultiStepParamScheduler", "OptimWrapper", "OptimWrapperDict", "PolyLR", "PolyMomentum",
    "PolyParamScheduler", "StepLR", "StepMomentum", "StepParamScheduler", "_ParamScheduler",
    "build_optim_wrapper",
]
