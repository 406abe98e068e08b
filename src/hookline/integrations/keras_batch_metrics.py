"""Metrics computed batch by batch for Keras's logs, as ``fit`` reports its compiled ones:
the Runner's metrics on the training batches (a forward hook keeps the step's output) or a
validation / test loop's on its batches, as running, batch-size-weighted means.

Example::

    >>> import torch
    >>> from hookline.hooks.keras_values import RunningMeans
    >>> means = RunningMeans()
    >>> ones = BatchMetrics({"n": lambda preds, targets: torch.tensor(float(len(targets)))})
    >>> add_batch(means, ones, None, {"preds": torch.zeros(4, 2), "targets": torch.zeros(4)})
    >>> means.logs()["n"]
    4.0
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from hookline.engine.metric_names import VAL_PREFIXES
from hookline.hooks.keras_values import RunningMeans, batch_size

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["BatchMetrics", "add_batch", "training_metrics"]


class BatchMetrics:
    """Metrics computed batch by batch, as running, batch-size-weighted means: the Runner's
    metrics on the training batches (``model`` given: a forward hook keeps the step's output),
    or a validation / test loop's metrics on its batches (from the outputs' ``preds``)."""

    def __init__(self, metrics: Mapping[str, Any], model: torch.nn.Module | None = None) -> None:
        self.metrics: dict[str, Any] = {}
        for name, metric in (metrics or {}).items():
            stateful = hasattr(metric, "update") and hasattr(metric, "compute")
            self.metrics[name] = copy.deepcopy(metric) if stateful else metric
        self.preds: Any = None
        self.capturing = False
        self.handle = model.register_forward_hook(self._keep) \
            if self.metrics and model is not None else None

    def _keep(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if self.capturing:
            self.preds = output

    def values(self, data_batch: Any, outputs: Any) -> dict[str, Any]:
        """This batch's metric values (device tensors), or {} without predictions and targets."""
        preds, self.preds = self.preds, None
        targets = None
        if isinstance(outputs, Mapping) and "preds" in outputs and "targets" in outputs:
            preds, targets = outputs["preds"], outputs["targets"]
        elif isinstance(data_batch, (list, tuple)) and len(data_batch) == 2:
            targets = data_batch[1]
        if not isinstance(preds, torch.Tensor) or not isinstance(targets, torch.Tensor):
            return {}
        preds = preds.detach()
        found: dict[str, Any] = {}
        for name, metric in self.metrics.items():
            if hasattr(metric, "update") and hasattr(metric, "compute"):
                metric.update(preds, targets)  # read as metric.compute() (see running)
            else:
                found[name] = metric(preds, targets)
        return found

    def running(self) -> dict[str, Any]:
        """The stateful (torchmetrics) metrics' values over the epoch so far."""
        found = {}
        for name, metric in self.metrics.items():
            if hasattr(metric, "update") and hasattr(metric, "compute") \
                    and getattr(metric, "update_count", 1) > 0:
                found[name] = metric.compute()
        return found

    def reset(self) -> None:
        for metric in self.metrics.values():
            if hasattr(metric, "reset"):
                metric.reset()

    def remove(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None


def training_metrics(runner: Runner) -> dict[str, Any]:
    """The Runner's metrics that Keras's logs report for training batches too (as ``fit``
    reports its compiled metrics): all but those named for validation (``"val/acc"``), which
    report under their own name, for validation only."""
    return {name: metric for name, metric in (getattr(runner, "metrics", None) or {}).items()
            if not name.startswith(VAL_PREFIXES)}


def add_batch(means: RunningMeans, metrics: BatchMetrics | None, data_batch: Any,
               outputs: Any) -> None:
    """One step's scalar outputs and (when ``metrics``) its metric values into ``means``,
    weighted by the batch size."""
    weight = batch_size(data_batch, outputs)
    means.add(outputs, weight)
    if metrics is not None:
        metrics.capturing = False
        values = metrics.values(data_batch, outputs)
        if values:
            count = means.count
            means.add(values, weight)
            means.count = count  # one count per sample, shared by all keys
