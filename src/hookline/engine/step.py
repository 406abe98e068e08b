"""The model step contract: ``train_step(data, optim_wrapper)`` (MMEngine's ``BaseModel``),
``training_step(batch)``, or ``loss_fn(model(inputs), targets)``.

Example::

    >>> import torch
    >>> from hookline.engine.step import run_step
    >>> model = torch.nn.Linear(3, 2)
    >>> batch = (torch.randn(4, 3), torch.tensor([0, 1, 1, 0]))
    >>> sorted(run_step(model, torch.nn.functional.cross_entropy, batch, "val"))
    ['loss', 'preds', 'targets']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from .optim_wrapper import OptimWrapperLike

_METHODS = {"train": "training_step", "val": "validation_step", "test": "test_step"}


def make_step(model: torch.nn.Module, loss_fn: Callable[..., Any] | None, mode: str
              ) -> Callable[[Any], Any]:
    """The step function of ``mode`` ("train", "val" or "test") for ``model``, resolved once.

    It calls ``model.training_step(batch)`` (``validation_step``,
    ``test_step``) when the model has it, else computes
    ``loss_fn(model(inputs), targets)`` on an ``(inputs, targets)`` batch; it
    returns the outputs dict (a ``validation_step`` / ``test_step`` may return a
    list of data samples instead). The Runner makes one per run, so the lookup
    is not repeated every iteration.
    """
    name = _METHODS[mode]
    method = getattr(model, name, None)
    if method is not None:
        def own_step(batch: Any) -> Any:
            outputs = method(batch)
            if isinstance(outputs, torch.Tensor):
                return {"loss": outputs}
            if mode != "train" and isinstance(outputs, (list, tuple)):
                return list(outputs)  # data samples (MMEngine's val_step): the metrics get them
            if not isinstance(outputs, Mapping) or (mode == "train" and "loss" not in outputs):
                raise TypeError(
                    f"{type(model).__name__}.{name} must return a dict with a 'loss' "
                    f"entry (plus anything to log)"
                    + ("" if mode == "train" else ", or a list of data samples")
                    + f", got {type(outputs).__name__}"
                )
            return dict(outputs)
        return own_step
    if mode == "train":
        def train_step(batch: Any) -> dict[str, Any]:
            inputs, targets = split_batch(batch, model)
            preds = model(inputs)
            if loss_fn is None:  # check_contract tells the user before a run gets here
                raise TypeError(f"{type(model).__name__} has no training_step(batch) and no "
                                "loss_fn was given")
            return {"loss": loss_fn(preds, targets)}
        return train_step

    def eval_step(batch: Any) -> dict[str, Any]:
        inputs, targets = split_batch(batch, model)
        preds = model(inputs)
        outputs = {"preds": preds, "targets": targets}
        if loss_fn is not None:
            outputs["loss"] = loss_fn(preds, targets)
        return outputs
    return eval_step


def make_train_step(model: torch.nn.Module, loss_fn: Callable[..., Any] | None,
                    optim_wrapper: OptimWrapperLike | None, ddp: torch.nn.Module | None = None
                    ) -> Callable[[Any], dict[str, Any]]:
    """The whole training step of one iteration: forward, loss, and the optimizer update.

    A model with MMEngine's ``train_step(data, optim_wrapper)`` runs its own
    update (e.g. a GAN stepping two optimizers) and returns what to log.
    Otherwise the forward (``training_step`` or ``loss_fn``) runs under
    ``optim_wrapper.optim_context`` (autocast, DDP ``no_sync`` on micro-batches)
    and ``optim_wrapper.update_params(loss)`` follows.
    """
    own = getattr(model, "train_step", None)
    if own is not None:
        def model_update(batch: Any) -> dict[str, Any]:
            outputs = own(batch, optim_wrapper)
            if isinstance(outputs, torch.Tensor):
                return {"loss": outputs}
            if not isinstance(outputs, Mapping):
                raise TypeError(f"{type(model).__name__}.train_step(data, optim_wrapper) must "
                                f"return a dict of values to log, got {type(outputs).__name__}")
            return dict(outputs)
        return model_update
    if optim_wrapper is None:
        raise ConfigError("a training step needs an optimizer wrapper unless the model has "
                          "MMEngine's train_step(data, optim_wrapper)")
    forward: Callable[[Any], dict[str, Any]]
    if ddp is not None:
        net: torch.nn.Module = ddp

        def forward(batch: Any) -> dict[str, Any]:
            outputs: dict[str, Any] = ddp(batch)  # StepModule.forward's dict
            return outputs
    else:
        net = model
        forward = make_step(model, loss_fn, "train")
    context = optim_wrapper.optim_context
    update = optim_wrapper.update_params

    def step(batch: Any) -> dict[str, Any]:
        with context(net):
            outputs = forward(batch)
        update(outputs["loss"])
        return outputs
    return step


def run_step(model: torch.nn.Module, loss_fn: Callable[..., Any] | None, batch: Any, mode: str
             ) -> Any:
    """One step of ``mode`` on ``batch``; returns the outputs dict (see :func:`make_step`)."""
    return make_step(model, loss_fn, mode)(batch)


def split_batch(batch: Any, model: torch.nn.Module) -> tuple[Any, Any]:
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    raise TypeError(
        f"batches must be (inputs, targets) pairs, got {type(batch).__name__}; or give "
        f"{type(model).__name__} training_step(batch) / validation_step(batch) methods"
    )


def check_contract(model: torch.nn.Module, loss_fn: Callable[..., Any] | None) -> None:
    """Fail early when the model cannot be trained with what was given."""
    if loss_fn is None and not hasattr(model, "training_step") and not hasattr(model, "train_step"):
        raise ConfigError(
            f"{type(model).__name__} has no training_step(batch) (nor MMEngine's "
            "train_step(data, optim_wrapper)); pass loss_fn= "
            "(e.g. torch.nn.CrossEntropyLoss()) so the Runner computes loss_fn(model(x), y)"
        )


class StepModule(torch.nn.Module):
    """What DistributedDataParallel wraps, so that gradients sync for either contract.

    Only training goes through it (evaluation needs no gradient sync).
    """

    def __init__(self, model: torch.nn.Module, loss_fn: Callable[..., Any] | None) -> None:
        super().__init__()
        self.module = model
        self.train_forward = make_step(model, loss_fn, "train")

    def forward(self, batch: Any) -> dict[str, Any]:
        outputs: dict[str, Any] = self.train_forward(batch)
        return outputs
