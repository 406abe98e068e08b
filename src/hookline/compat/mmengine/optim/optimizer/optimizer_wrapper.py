"""``mmengine.optim.optimizer.optimizer_wrapper``: ``OptimWrapper`` (hookline's).

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.optim.optimizer.optimizer_wrapper import OptimWrapper
    >>> wrapper = OptimWrapper(torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1))
    >>> wrapper.get_lr()
    {'lr': [0.1]}
"""

from hookline.engine.optim_wrapper import OptimWrapper

from ....unsupported import MMENGINE_OPTIM, module_getattr

__getattr__ = module_getattr(__name__, MMENGINE_OPTIM)  # BaseOptimWrapper: what to use

__all__ = ["OptimWrapper"]
