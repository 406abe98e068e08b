"""Keeping the ranks of a multi-process run identical around a model's own update.

A model with MMEngine's ``train_step(data, optim_wrapper)`` steps its
optimizers itself, so DistributedDataParallel cannot wrap the whole update.
MMEngine's unmodified ``BaseModel.train_step`` (marked :data:`DDP_LOSS_FORWARD`
by ``hookline.compat``) runs its loss forward through DDP
(:func:`ddp_base_model_step`); any other own ``train_step`` runs under an
:class:`OwnStepSync`, which averages gradients before each optimizer step.
:func:`hookline.engine.step.wrap_for_training` chooses.

Example::

    >>> import torch
    >>> def train_step(self, data, optim_wrapper): ...
    >>> setattr(train_step, DDP_LOSS_FORWARD, True)
    >>> Model = type("Model", (torch.nn.Module,), {"train_step": train_step})
    >>> uses_compat_train_step(Model())
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from hookline.core import ConfigError

from . import distributed

__all__ = ["DDP_LOSS_FORWARD", "OwnStepSync", "ddp_base_model_step", "uses_compat_train_step"]


#: set to True on a ``train_step`` function that is MMEngine's ``BaseModel.train_step``
#: (``data_preprocessor``, ``self(**data, mode="loss")``, ``parse_losses``, ``update_params``):
#: on several processes its loss forward then runs through DDP, as in MMEngine
DDP_LOSS_FORWARD = "__hookline_ddp_loss_forward__"


def uses_compat_train_step(model: torch.nn.Module) -> bool:
    """Whether ``model``'s class has a ``train_step`` marked :data:`DDP_LOSS_FORWARD`
    (``hookline.compat.mmengine``'s ``BaseModel.train_step``, not overridden), so its loss
    forward can run through DDP."""
    method = getattr(type(model), "train_step", None)
    return getattr(method, DDP_LOSS_FORWARD, False) is True


def ddp_base_model_step(model: Any, ddp: torch.nn.Module, optim_wrapper: Any
                         ) -> Callable[..., dict[str, Any]]:
    """``BaseModel.train_step`` with the forward through ``ddp`` (which wraps ``model``),
    so the backward all-reduces the gradients (MMEngine's ``MMDistributedDataParallel``)."""
    if optim_wrapper is None:
        raise ConfigError(f"{type(model).__name__}.train_step(data, optim_wrapper) needs an "
                          "optimizer: pass optimizer= or optim_wrapper=")

    def step(batch: Any, batch_idx: int = 0) -> dict[str, Any]:  # noqa: ARG001
        with optim_wrapper.optim_context(ddp):
            data = model.data_preprocessor(batch, True)
            if isinstance(data, Mapping):
                losses = ddp(**data, mode="loss")
            elif isinstance(data, (list, tuple)):
                losses = ddp(*data, mode="loss")
            else:
                raise TypeError(f"the data preprocessor must give a dict, tuple or list, got "
                                f"{type(data).__name__}")
        loss, log_vars = model.parse_losses(losses)
        optim_wrapper.update_params(loss)
        log_vars["loss"] = loss.detach()
        return dict(log_vars)
    return step


def _sync_before_steps(event: Any, optimizer: torch.optim.Optimizer) -> tuple[Any, Any]:
    """Average ``optimizer``'s gradients over the ranks at ``event`` (its wrapper's
    ``before_step``: before clipping), and, for a step that bypasses the wrapper
    (``optim_wrapper.optimizer.step()``), just before the optimizer's own step."""
    done = [False]  # averaged since the last optimizer step

    def average() -> None:
        distributed.average_gradients(
            [p for group in optimizer.param_groups for p in group["params"]])
        done[0] = True

    def before_optimizer_step(*_: Any) -> None:
        if not done[0]:
            average()
        done[0] = False
    return (event.register(average, priority="HIGHEST"),
            optimizer.register_step_pre_hook(before_optimizer_step))


class OwnStepSync(torch.nn.Module):
    """Keeps the ranks identical around a model's own ``train_step(data, optim_wrapper)``,
    which DistributedDataParallel cannot wrap (it steps the optimizers itself).

    Built once: rank 0's parameters and buffers go to every rank. Each step,
    the buffers are broadcast from rank 0 first (``broadcast_buffers``, as DDP
    does), and every optimizer wrapper's ``before_step`` event (before clipping,
    before the user's hooks there) averages its parameters' gradients over the
    ranks; under accumulation that happens once per optimizer step.
    """

    def __init__(self, model: torch.nn.Module, broadcast_buffers: bool = True) -> None:
        super().__init__()
        self.module = model
        self.broadcast_buffers = broadcast_buffers
        distributed.broadcast_tensors([*model.parameters(), *model.buffers()])
        self._attached: list[Any] = []  # (wrapper, handles): its hooks, once per wrapper

    def attach(self, optim_wrapper: Any) -> None:
        """Average the gradients of ``optim_wrapper``'s parameters before each of its steps
        (every wrapper of an ``OptimWrapperDict``); a wrapper without a ``before_step``
        event, or with a float16 loss scaler, cannot be synced: ConfigError."""
        wrappers = list(optim_wrapper.values()) if hasattr(optim_wrapper, "values") else \
            [optim_wrapper]
        for wrapper in wrappers:
            if any(entry[0] is wrapper for entry in self._attached):
                continue
            event = getattr(wrapper, "before_step", None)
            if event is None or not hasattr(event, "register"):
                raise ConfigError(
                    f"{type(self.module).__name__} has its own train_step(data, optim_wrapper) "
                    f"and {type(wrapper).__name__} has no before_step event, so hookline cannot "
                    "average the gradients over the ranks: use hookline's OptimWrapper or "
                    "AmpOptimWrapper (or a subclass)")
            if getattr(wrapper, "loss_scaler", None) is not None:
                raise ConfigError(
                    f"{type(self.module).__name__} has its own train_step(data, optim_wrapper) "
                    "and the AmpOptimWrapper scales float16 losses: on several processes the "
                    "ranks could disagree on skipping a step with inf gradients; use "
                    "dtype='bfloat16', or train through training_step / loss_fn")
            self._attached.append((wrapper, *_sync_before_steps(event, wrapper.optimizer)))

    def synced(self, own: Callable[..., Any], optim_wrapper: Any) -> Callable[..., Any]:
        """``own`` (the model's ``train_step``) with this sync around it."""
        if optim_wrapper is None:
            raise ConfigError(f"{type(self.module).__name__} has its own train_step(data, "
                              "optim_wrapper) but the run has no optimizer wrapper, so hookline "
                              "cannot average its gradients over the ranks: pass optimizer= "
                              "or optim_wrapper=")
        self.attach(optim_wrapper)
        buffers = [b for b in self.module.buffers()] if self.broadcast_buffers else []

        def train_step(data: Any, wrapper: Any) -> Any:
            if buffers:
                distributed.broadcast_tensors(buffers)
            return own(data, wrapper)
        return train_step

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)
