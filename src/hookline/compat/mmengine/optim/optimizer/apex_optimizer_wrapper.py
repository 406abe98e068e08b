"""``mmengine.optim.optimizer.apex_optimizer_wrapper``: MMEngine's ``ApexOptimWrapper`` is not ported;
importing it is an ``ImportError`` that says what to use instead.

Example::

    >>> try:
    ...     from hookline.compat.mmengine.optim.optimizer.apex_optimizer_wrapper import ApexOptimWrapper
    ... except ImportError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    MMEngine's ApexOptimWrapper is not supported by hookline: ...
"""

from ....unsupported import MMENGINE_OPTIM, module_getattr

__getattr__ = module_getattr(__name__, MMENGINE_OPTIM)

__all__: list[str] = []
