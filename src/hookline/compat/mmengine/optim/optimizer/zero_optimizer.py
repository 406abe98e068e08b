"""``mmengine.optim.optimizer.zero_optimizer``: MMEngine's ``ZeroRedundancyOptimizer`` is not ported;
importing it is an ``ImportError`` that says what to use instead.

Example::

    >>> try:
    ...     from hookline.compat.mmengine.optim.optimizer.zero_optimizer import ZeroRedundancyOptimizer
    ... except ImportError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    MMEngine's ZeroRedundancyOptimizer is not supported by hookline: ...
"""

from ....unsupported import MMENGINE_OPTIM, module_getattr

__getattr__ = module_getattr(__name__, MMENGINE_OPTIM)

__all__: list[str] = []
