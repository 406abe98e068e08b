"""The model step contract: ``training_step(batch)``, or ``loss_fn(model(inputs), targets)``.

Example::

    >>> import torch
    >>> from hookline.engine.step import run_step
    >>> model = torch.nn.Linear(3, 2)
    >>> batch = (torch.randn(4, 3), torch.tensor([0, 1, 1, 0]))
    >>> sorted(run_step(model, torch.nn.functional.cross_entropy, batch, "val"))
    ['loss', 'preds', 'targets']
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any

import torch

from hookline.core import ConfigError

_METHODS = {"train": "training_step", "val": "validation_step", "test": "test_step"}
# Models known to lack a mode's method: a failed lookup on a Module goes through
# Module.__getattr__ and raises inside, which is slow to repeat every iteration.
_LACKS: dict[str, weakref.WeakSet] = {mode: weakref.WeakSet() for mode in _METHODS}


def step_method(model: torch.nn.Module, mode: str) -> Callable | None:
    """``model.training_step`` (``validation_step``, ``test_step`` for "val", "test") or None."""
    lacks = _LACKS[mode]
    try:
        if model in lacks:
            return None
    except TypeError:  # an unhashable module (it defines __eq__ only): look it up every time
        return getattr(model, _METHODS[mode], None)
    method = getattr(model, _METHODS[mode], None)
    if method is None:
        lacks.add(model)
    return method


def run_step(model: torch.nn.Module, loss_fn: Callable | None, batch: Any, mode: str) -> dict:
    """One step of ``mode`` ("train", "val" or "test"); returns the outputs dict."""
    method = step_method(model, mode)
    if method is not None:
        outputs = method(batch)
        if isinstance(outputs, torch.Tensor):
            outputs = {"loss": outputs}
        if not isinstance(outputs, Mapping) or (mode == "train" and "loss" not in outputs):
            raise TypeError(
                f"{type(model).__name__}.{_METHODS[mode]} must return a dict with a 'loss' "
                f"entry (plus anything to log), got {type(outputs).__name__}"
            )
        return dict(outputs)
    inputs, targets = split_batch(batch, model)
    preds = model(inputs)
    if mode == "train":
        return {"loss": loss_fn(preds, targets)}
    outputs = {"preds": preds, "targets": targets}
    if loss_fn is not None:
        outputs["loss"] = loss_fn(preds, targets)
    return outputs


def split_batch(batch: Any, model: torch.nn.Module) -> tuple[Any, Any]:
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    raise TypeError(
        f"batches must be (inputs, targets) pairs, got {type(batch).__name__}; or give "
        f"{type(model).__name__} training_step(batch) / validation_step(batch) methods"
    )


def check_contract(model: torch.nn.Module, loss_fn: Callable | None) -> None:
    """Fail early when the model cannot be trained with what was given."""
    if loss_fn is None and not hasattr(model, "training_step"):
        raise ConfigError(
            f"{type(model).__name__} has no training_step(batch); pass loss_fn= "
            "(e.g. torch.nn.CrossEntropyLoss()) so the Runner computes loss_fn(model(x), y)"
        )


class StepModule(torch.nn.Module):
    """What DistributedDataParallel wraps, so that gradients sync for either contract."""

    def __init__(self, model: torch.nn.Module, loss_fn: Callable | None) -> None:
        super().__init__()
        self.module = model
        self.loss_fn = loss_fn

    def forward(self, batch: Any, mode: str) -> dict:
        return run_step(self.module, self.loss_fn, batch, mode)
