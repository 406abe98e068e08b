"""``mmengine.optim.optimizer.amp_optimizer_wrapper``: ``AmpOptimWrapper`` (hookline's:
torch.amp mixed precision, with MMEngine's ``loss_scale`` and ``dtype``).

Example::

    >>> from hookline.compat.mmengine.optim.optimizer.amp_optimizer_wrapper import (
    ...     AmpOptimWrapper)
    >>> import hookline
    >>> AmpOptimWrapper is hookline.AmpOptimWrapper
    True
"""

from hookline.engine.amp_optim_wrapper import AmpOptimWrapper

__all__ = ["AmpOptimWrapper"]
