"""The built-in metrics (``accuracy``, ``mse``, registered in ``METRICS``) and the Runner's
``metrics`` argument: names, configs, callables or torchmetrics ``Metric`` objects, each
checked to be something the :class:`~hookline.engine.evaluator.Evaluator` can run.

Example::

    >>> import torch
    >>> metrics = build_metrics({"acc": "accuracy", "err": mse})
    >>> float(metrics["acc"](torch.tensor([[0.1, 0.9], [0.8, 0.2]]), torch.tensor([1, 1])))
    0.5
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from hookline.core import ConfigError

from .registries import METRICS

__all__ = ["accuracy", "build_metrics", "is_torchmetric", "mse", "returns_one_number"]


def accuracy(preds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Top-1 accuracy of class scores ``preds`` (N, C) against labels ``targets`` (N,)."""
    return (preds.argmax(dim=1) == targets).float().mean()


def mse(preds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean squared error."""
    return torch.mean((preds.float() - targets.float()) ** 2)


METRICS.register(accuracy, name="accuracy")
METRICS.register(mse, name="mse")

#: the built-in metrics: each returns one number, reported under the name it is given
_ONE_NUMBER = (accuracy, mse)


def returns_one_number(metric: Any) -> bool:
    """Whether ``metric`` (a callable, or a registered name) is known to return one number,
    reported under the name it is given (the built-in ``accuracy`` and ``mse``). Anything
    else may return a dict whose keys are known only once it ran.

        >>> returns_one_number("accuracy"), returns_one_number(mse), returns_one_number(len)
        (True, True, False)
    """
    if isinstance(metric, str):
        try:
            metric = METRICS.get(metric)
        except ConfigError:
            return False
    return any(metric is known for known in _ONE_NUMBER)


def build_metrics(spec: Any) -> dict[str, Any]:
    """Normalise the Runner's ``metrics`` argument: names, configs or callables."""
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise ConfigError(f"metrics must be a dict of name -> metric, got {spec!r}")
    built = {}
    for name, metric in spec.items():
        if isinstance(metric, str):
            metric = METRICS.get(metric)
        elif isinstance(metric, Mapping):
            metric = METRICS.build(metric)
        if not callable(metric) and not is_torchmetric(metric):
            raise ConfigError(f"metric {name!r} must be callable or a torchmetrics Metric")
        built[name] = metric
    return built


def is_torchmetric(metric: Any) -> bool:
    """Whether ``metric`` is used as a torchmetrics ``Metric`` (``update`` / ``compute`` / ``reset``)."""
    return hasattr(metric, "update") and hasattr(metric, "compute") and hasattr(metric, "reset")
