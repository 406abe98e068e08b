"""``mmengine.model``: ``is_model_wrapper``, ``BaseModel`` and the averaged models.

Example::

    >>> from typing import Any

from typing import Any

import torch
    >>> from hookline.compat.mmengine.model import is_model_wrapper
    >>> is_model_wrapper(torch.nn.Linear(1, 1))
    False
"""

from __future__ import annotations

from typing import Any

import torch

from .averaged_model import (
    BaseAveragedModel,
    ExponentialMovingAverage,
    MomentumAnnealingEMA,
    StochasticWeightAverage,
)
from .base_model import BaseDataPreprocessor, BaseModel, BaseModule
from .wrappers import MMDistributedDataParallel, is_model_wrapper


def convert_sync_batchnorm(module: torch.nn.Module, implementation: str = "torch") -> torch.nn.Module:
    """BatchNorm layers as ``torch.nn.SyncBatchNorm`` (only the torch implementation)."""
    if implementation != "torch":
        from hookline.core import ConfigError  # noqa: PLC0415  (an error path)

        raise ConfigError(f"only implementation='torch' is supported, got {implementation!r}")
    convert: Any = torch.nn.SyncBatchNorm.convert_sync_batchnorm
    converted: torch.nn.Module = convert(module)
    return converted


__all__ = [
    "BaseAveragedModel", "BaseDataPreprocessor", "BaseModel", "BaseModule",
    "ExponentialMovingAverage", "MMDistributedDataParallel", "MomentumAnnealingEMA",
    "StochasticWeightAverage", "convert_sync_batchnorm", "is_model_wrapper",
]
