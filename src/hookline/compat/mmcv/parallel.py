"""``mmcv.parallel``: ``is_module_wrapper`` and the wrapper class names.

Example::

    >>> import torch
    >>> from hookline.compat.mmcv.parallel import is_module_wrapper
    >>> is_module_wrapper(torch.nn.Linear(1, 1))
    False
"""

from __future__ import annotations

from typing import Any

import torch

from .utils import Registry

MODULE_WRAPPERS = Registry("module wrapper", scope="mmcv")


class MMDataParallel(torch.nn.DataParallel):  # type: ignore[type-arg]
    """mmcv's name for ``torch.nn.DataParallel``."""


class MMDistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """mmcv's name for ``DistributedDataParallel``."""


MODULE_WRAPPERS.add_builtins({
    "DataParallel": torch.nn.DataParallel,
    "DistributedDataParallel": torch.nn.parallel.DistributedDataParallel,
    "MMDataParallel": MMDataParallel, "MMDistributedDataParallel": MMDistributedDataParallel})


def is_module_wrapper(module: Any) -> bool:
    """Whether ``module`` is a registered wrapper (DataParallel, DDP, their mmcv names, ...)."""
    from ..mmengine.model.wrappers import is_model_wrapper  # noqa: PLC0415  (shared walk)

    return is_model_wrapper(module, MODULE_WRAPPERS)


__all__ = ["MMDataParallel", "MMDistributedDataParallel", "MODULE_WRAPPERS", "is_module_wrapper"]
