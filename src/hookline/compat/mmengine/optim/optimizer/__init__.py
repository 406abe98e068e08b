"""``mmengine.optim.optimizer``: the optimizer wrappers, their constructors and
``build_optim_wrapper(model, cfg)``, as MMEngine builds them.

The modules follow MMEngine's: :mod:`.optimizer_wrapper` (``OptimWrapper``),
:mod:`.amp_optimizer_wrapper` (``AmpOptimWrapper``), :mod:`.optimizer_wrapper_dict`
(``OptimWrapperDict``), :mod:`.default_constructor` (``DefaultOptimWrapperConstructor``) and
:mod:`.builder` (``build_optim_wrapper``, ``OPTIMIZERS``, ``OPTIM_WRAPPER_CONSTRUCTORS``);
the wrappers are hookline's. ``ApexOptimWrapper``, ``ZeroRedundancyOptimizer`` and
``BaseOptimWrapper`` are an ``ImportError`` saying what to use instead.

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.optim.optimizer import build_optim_wrapper
    >>> wrapper = build_optim_wrapper(torch.nn.Linear(2, 1),
    ...                               {"optimizer": {"type": "SGD", "lr": 0.1}})
    >>> type(wrapper).__name__, wrapper.get_lr()
    ('OptimWrapper', {'lr': [0.1]})
"""

from ....unsupported import MMENGINE_OPTIM, module_getattr
from .amp_optimizer_wrapper import AmpOptimWrapper
from .builder import OPTIM_WRAPPER_CONSTRUCTORS, OPTIMIZERS, build_optim_wrapper
from .default_constructor import DefaultOptimWrapperConstructor
from .optimizer_wrapper import OptimWrapper
from .optimizer_wrapper_dict import OptimWrapperDict

__getattr__ = module_getattr(__name__, MMENGINE_OPTIM)

__all__ = ["OPTIMIZERS", "OPTIM_WRAPPER_CONSTRUCTORS", "AmpOptimWrapper",
           "DefaultOptimWrapperConstructor", "OptimWrapper", "OptimWrapperDict",
           "build_optim_wrapper"]
