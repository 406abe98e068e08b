"""``mmengine.optim.optimizer.optimizer_wrapper_dict``: ``OptimWrapperDict`` (hookline's: one
wrapper per submodule, as a GAN's generator and discriminator).

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.optim.optimizer.optimizer_wrapper_dict import (
    ...     OptimWrapperDict)
    >>> from hookline.compat.mmengine.optim import OptimWrapper
    >>> net = torch.nn.Linear(2, 1)
    >>> wrappers = OptimWrapperDict(gen=OptimWrapper(torch.optim.SGD(net.parameters(), lr=0.1)))
    >>> list(wrappers)
    ['gen']
"""

from hookline.engine.optim_wrapper_dict import OptimWrapperDict

__all__ = ["OptimWrapperDict"]
