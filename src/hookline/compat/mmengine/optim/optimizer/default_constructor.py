"""``mmengine.optim.optimizer.default_constructor``: ``DefaultOptimWrapperConstructor``
(hookline's: ``optimizer_cfg``, ``base_lr``, ``base_wd``, ``paramwise_cfg`` and
``add_params`` as MMEngine's; its own ``add_params`` refuses a non-empty ``paramwise_cfg``,
a subclass that overrides it takes one).

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.optim.optimizer.default_constructor import (
    ...     DefaultOptimWrapperConstructor)
    >>> class HalfBiasLr(DefaultOptimWrapperConstructor):
    ...     def add_params(self, params, module, prefix="", is_dcn_module=None):
    ...         for name, param in module.named_parameters():
    ...             lr = self.base_lr / 2 if name.endswith("bias") else self.base_lr
    ...             params.append({"params": [param], "lr": lr})
    >>> make = HalfBiasLr({"optimizer": {"type": "SGD", "lr": 0.1}}, paramwise_cfg={"on": 1})
    >>> make(torch.nn.Linear(2, 1)).get_lr()
    {'lr': [0.1, 0.05]}
"""

from hookline.engine.build import DefaultOptimWrapperConstructor

__all__ = ["DefaultOptimWrapperConstructor"]
