"""The loss of a training step, when it is not one the step can train on: one clear error.

``loss_fn(model(inputs), targets)`` that raises (a loss for other targets, a
forward returning a dict, a model with fewer classes than the data) and a
loss that is not a 0-d tensor (``reduction="none"``) would otherwise surface as
torch's own errors from deep inside the step or the backward. Both become a
:class:`LossError` (a :class:`ConfigError`: the command line shows it as one
``error:`` line) naming the loss function and the shapes it got, with the
original exception chained. Nothing here runs on the normal path: the step
calls :func:`loss_failure` in an ``except`` branch, and :func:`check_loss_value`
only for a loss that is not a plain 0-d tensor (a type test and ``dim()``, no
host-device sync).

Example::

    >>> import torch
    >>> loss_fn = torch.nn.CrossEntropyLoss()
    >>> preds, targets = {"logits": torch.zeros(4, 3)}, torch.tensor([0, 1, 2, 0])
    >>> try:
    ...     loss_fn(preds, targets)
    ... except TypeError as exc:
    ...     print(str(loss_failure(loss_fn, preds, targets, exc)).split(":")[0])
    loss_fn CrossEntropyLoss failed on preds dict with keys ['logits'] and targets (4,) int64
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import torch

from hookline.core import ConfigError

__all__ = ["LossError", "check_loss_value", "loss_failure", "loss_name"]


class LossError(ConfigError):
    """The training loss cannot be computed or trained on (see the module's docstring); the
    original exception, if any, is ``__cause__``."""


def loss_name(loss_fn: Any) -> str:
    """``MSELoss`` for a module, ``cross_entropy`` for a function (what messages name).

    Example::

        >>> loss_name(torch.nn.MSELoss()), loss_name(torch.nn.functional.cross_entropy)
        ('MSELoss', 'cross_entropy')
    """
    while isinstance(loss_fn, functools.partial):
        loss_fn = loss_fn.func
    name = getattr(loss_fn, "__name__", None)
    return name if isinstance(name, str) else type(loss_fn).__name__


def _described(value: Any) -> str:
    """``(32, 10) float32`` for a tensor, ``dict with keys [...]`` for a dict, else the type."""
    if isinstance(value, torch.Tensor):
        return f"{tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}"
    if isinstance(value, Mapping):
        return f"{type(value).__name__} with keys {list(map(str, value))[:8]}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__} of {len(value)}"
    return type(value).__name__


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    text = lines[0].rstrip(".") if lines else type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _class_hint(preds: torch.Tensor, targets: torch.Tensor, exc: BaseException) -> str:
    """What integer targets with one dimension fewer than the predictions suggest."""
    classes = preds.shape[1]
    if isinstance(exc, IndexError) or "out of bounds" in str(exc):
        lo, hi = int(targets.min()), int(targets.max())  # a failed step: a sync costs nothing
        return (f"; the targets are class indices from {lo} to {hi}, but preds has {classes} "
                f"classes (dim 1): the model's number of outputs (num_classes) must be more "
                "than the largest target")
    return (f"; the targets look like class indices ({_described(targets)}) for preds of "
            f"{classes} classes: a classification loss takes those (CrossEntropyLoss, or "
            "NLLLoss on log-probabilities); a loss such as MSELoss needs targets shaped like "
            "the preds")


def _hint(preds: Any, targets: Any, exc: BaseException) -> str:
    if isinstance(preds, Mapping) or (isinstance(preds, (tuple, list))
                                       and not isinstance(preds, torch.Size)):
        what = (f"a dict (keys {list(map(str, preds))[:8]})" if isinstance(preds, Mapping)
                else f"a {type(preds).__name__}")
        return (f"; the model's forward returned {what}, and loss_fn is called as "
                "loss_fn(model(inputs), targets): return the predictions tensor from forward, "
                "or define training_step(self, batch, batch_idx) returning the loss")
    if isinstance(preds, torch.Tensor) and isinstance(targets, torch.Tensor) \
            and preds.is_floating_point() and not targets.is_floating_point() \
            and not targets.is_complex() and targets.dtype is not torch.bool \
            and preds.dim() == targets.dim() + 1 and preds.dim() >= 2 and targets.numel():
        return _class_hint(preds, targets, exc)
    return ""


def loss_failure(loss_fn: Callable[..., Any], preds: Any, targets: Any,
                 exc: Exception) -> Exception:
    """The error to raise, ``from exc``, for ``loss_fn(preds, targets)`` that raised ``exc``:
    a :class:`LossError` naming the loss function and what it got; ``exc`` itself for an
    error that is no mistake of the loss (out of memory) or says what it means already."""
    if isinstance(exc, (ConfigError, MemoryError, torch.cuda.OutOfMemoryError)):
        return exc
    try:
        hint = _hint(preds, targets, exc)
    except Exception:  # a device in an error state (a CUDA assert): the message without it
        hint = ""
    return LossError(f"loss_fn {loss_name(loss_fn)} failed on preds {_described(preds)} and "
                     f"targets {_described(targets)}: {_first_line(exc)}{hint}")


def check_loss_value(loss: Any, source: str, loss_fn: Any = None) -> None:
    """Raise :class:`LossError` unless ``loss`` is a tensor holding one number (called for a
    loss that is not a plain 0-d tensor; one of shape ``[1]`` trains as torch allows).
    ``source`` names what computed it (``Net.training_step``, ``loss_fn``)."""
    if not isinstance(loss, torch.Tensor):
        raise LossError(f"{_source(source, loss_fn)} returned a loss of type "
                        f"{type(loss).__name__}; the loss must be a 0-d tensor (one number, "
                        "with its gradient) to train on")
    if loss.ndim == 0 or loss.numel() == 1:
        return
    reduce = ("reduction='mean' or 'sum', not 'none'"
              if getattr(loss_fn, "reduction", None) == "none"
              else "reduction='mean' for a torch loss, or .mean() / .sum() on the result")
    raise LossError(f"{_source(source, loss_fn)} returned a loss of shape {list(loss.shape)}; "
                    f"the loss must be a 0-d tensor (one number) to train on: reduce it "
                    f"({reduce})")


def _source(source: str, loss_fn: Any) -> str:
    return f"loss_fn {loss_name(loss_fn)}" if source == "loss_fn" and loss_fn is not None \
        else source
