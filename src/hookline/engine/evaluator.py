"""Validation and test metrics: exact over the whole epoch, reduced across ranks.

``metrics`` maps a name to ``callable(preds, targets)`` (computed once on
the predictions of the whole epoch, so any metric is exact) or to a
torchmetrics ``Metric`` (updated per batch, computed at the end). A
``loss`` entry in the step outputs is averaged over samples.

Example::

    >>> import torch
    >>> from hookline.engine.evaluator import Evaluator, accuracy
    >>> ev = Evaluator({"acc": accuracy})
    >>> ev.process({"preds": torch.tensor([[0.1, 0.9], [0.8, 0.2]]), "targets": torch.tensor([1, 1]),
    ...             "loss": torch.tensor(0.5)})
    >>> ev.compute()
    {'loss': 0.5, 'acc': 0.5}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from hookline.core import ConfigError, Registry

from . import distributed

METRICS = Registry("metric")


@METRICS.register(name="accuracy")
def accuracy(preds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Top-1 accuracy of class scores ``preds`` (N, C) against labels ``targets`` (N,)."""
    return (preds.argmax(dim=1) == targets).float().mean()


@METRICS.register(name="mse")
def mse(preds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean squared error."""
    return torch.mean((preds.float() - targets.float()) ** 2)


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
        if not callable(metric) and not _is_torchmetric(metric):
            raise ConfigError(f"metric {name!r} must be callable or a torchmetrics Metric")
        built[name] = metric
    return built


def _is_torchmetric(metric: Any) -> bool:
    return hasattr(metric, "update") and hasattr(metric, "compute") and hasattr(metric, "reset")


class Evaluator:
    """Accumulates one epoch of step outputs and turns them into metrics."""

    def __init__(self, metrics: Mapping[str, Any]) -> None:
        self.metrics = dict(metrics)
        self.reset()

    def reset(self) -> None:
        self._preds: list[torch.Tensor] = []
        self._targets: list[torch.Tensor] = []
        self._sums: dict[str, torch.Tensor] = {}
        self._count = 0
        for metric in self.metrics.values():
            if _is_torchmetric(metric):
                metric.reset()

    def process(self, outputs: Mapping[str, Any]) -> None:
        """Take one batch's outputs (``preds``, ``targets`` and scalar entries)."""
        preds, targets = outputs.get("preds"), outputs.get("targets")
        size = len(targets) if isinstance(targets, torch.Tensor) and targets.dim() else 1
        for key, value in outputs.items():
            if key in ("preds", "targets") or not isinstance(value, torch.Tensor) \
                    or value.numel() != 1:
                continue
            total = value.detach().double().reshape(()) * size
            self._sums[key] = self._sums[key] + total if key in self._sums else total
        self._count += size
        if preds is None or targets is None or not self.metrics:
            return
        for metric in self.metrics.values():
            if _is_torchmetric(metric):
                metric.to(preds.device)
                metric.update(preds, targets)
        if any(not _is_torchmetric(m) for m in self.metrics.values()):
            self._preds.append(preds.detach())
            self._targets.append(targets.detach())

    def compute(self) -> dict[str, float]:
        """The epoch's metrics as floats, reduced over ranks (one sync, at the end)."""
        results: dict[str, float] = {}
        if self._sums:
            keys = sorted(self._sums)
            device = self._sums[keys[0]].device
            count = torch.tensor(float(self._count), dtype=torch.float64, device=device)
            packed = torch.stack([self._sums[k].to(device) for k in keys] + [count])
            packed = distributed.all_reduce_sum(packed)
            for key, value in zip(keys, (packed[:-1] / packed[-1]).tolist()):
                results[key] = value
        if self._preds:
            preds = distributed.all_gather_cat(torch.cat(self._preds))
            targets = distributed.all_gather_cat(torch.cat(self._targets))
        for name, metric in self.metrics.items():
            value = metric.compute() if _is_torchmetric(metric) else \
                _call_metric(name, metric, preds, targets) if self._preds else None
            if value is not None:
                results[name] = float(value.item() if isinstance(value, torch.Tensor) else value)
        return results


def _call_metric(name: str, metric: Callable, preds: torch.Tensor,
                 targets: torch.Tensor) -> Any:
    try:
        return metric(preds, targets)
    except Exception as exc:
        raise RuntimeError(f"metric {name!r} failed on preds {tuple(preds.shape)} and "
                           f"targets {tuple(targets.shape)}: {exc}") from exc
