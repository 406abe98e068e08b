"""The model step contract: ``train_step(data, optim_wrapper)`` (MMEngine's ``BaseModel``),
``training_step(batch)`` or Lightning's ``training_step(batch, batch_idx)``, or
``loss_fn(model(inputs), targets)``.

Example::

    >>> import torch
    >>> from hookline.engine.step import run_step
    >>> model = torch.nn.Linear(3, 2)
    >>> batch = (torch.randn(4, 3), torch.tensor([0, 1, 1, 0]))
    >>> sorted(run_step(model, torch.nn.functional.cross_entropy, batch, "val"))
    ['loss', 'preds', 'targets']
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError

from . import distributed
from .checkpoint.fit import unwrapped_model
from .step_loss import check_loss_value, loss_failure
from .step_sync import OwnStepSync, ddp_base_model_step, uses_compat_train_step

if TYPE_CHECKING:  # pragma: no cover
    from .optim_wrapper import OptimWrapperLike

_METHODS = {"train": "training_step", "val": "validation_step", "test": "test_step"}
#: modules whose classes' methods are framework stubs, not the user's (LightningModule's
#: ``training_step`` / ``configure_optimizers`` ... exist on every module and only warn or raise)
_FRAMEWORKS = ("lightning.", "pytorch_lightning.", "lightning_fabric.")
_EMPTY = inspect.Parameter.empty


def own_method(model: Any, name: str) -> Callable[..., Any] | None:
    """``model.<name>`` when the model (or its class, for a class) defines it, else None.

    A ``LightningModule``'s inherited stubs (``validation_step``,
    ``configure_optimizers`` ...) do not count: only methods its subclass wrote.

    Example::

        >>> class Net(torch.nn.Module):
        ...     def training_step(self, batch, batch_idx):
        ...         return batch.sum()
        >>> own_method(Net(), "training_step") is not None, own_method(Net, "test_step")
        (True, None)
    """
    cls = model if isinstance(model, type) else type(model)
    for base in cls.__mro__:
        if name in vars(base):
            if (getattr(base, "__module__", "") or "").startswith(_FRAMEWORKS):
                return None
            found: Callable[..., Any] = getattr(model, name)
            return found
    if isinstance(model, type):
        return None
    return getattr(model, name, None)  # an instance attribute


def step_arity(method: Callable[..., Any], where: str) -> int:
    """How many of ``(batch, batch_idx, dataloader_idx)`` a step method takes, decided once.

    ``step(batch)`` -> 1; ``step(batch, batch_idx)`` (Lightning), or
    ``step(*args)`` -> 2; a third parameter without a default
    (``dataloader_idx``) -> 3, and it gets 0 (one dataloader per mode). A second
    parameter with a default is passed only when it is named ``batch_idx``.

    Example::

        >>> step_arity(lambda batch, batch_idx, dataloader_idx=0: None, "validation_step")
        2
    """
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):  # a builtin or C method: keep the one-argument call
        return 1
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 2
    positional = [p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                   inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if not positional:
        raise ConfigError(f"{where} must take the batch: {where}(batch) or "
                          f"{where}(batch, batch_idx), got {where}{inspect.signature(method)}")
    if len(positional) >= 3 and positional[2].default is _EMPTY:
        return 3
    if len(positional) >= 2 and (positional[1].default is _EMPTY
                                 or positional[1].name == "batch_idx"):
        return 2
    return 1


def make_step(model: torch.nn.Module, loss_fn: Callable[..., Any] | None, mode: str
              ) -> Callable[..., Any]:
    """The step function ``step(batch, batch_idx=0)`` of ``mode`` ("train", "val" or
    "test") for ``model``, resolved once.

    It calls ``model.training_step(batch)`` (``validation_step``,
    ``test_step``; Lightning's ``(batch, batch_idx)`` form too, see
    :func:`step_arity`) when the model has it, else computes
    ``loss_fn(model(inputs), targets)`` on an ``(inputs, targets)`` batch; it
    returns the outputs dict (a ``validation_step`` / ``test_step`` may return a
    list of data samples instead, or None for no outputs; a ``training_step``
    may return None to skip the batch, as in Lightning). The Runner makes one
    per run, so the lookup and the signature check are not repeated every iteration.
    """
    name = _METHODS[mode]
    method = own_method(model, name)
    if method is None and mode == "test" and loss_fn is None:  # no loss_fn to test with: the
        # validation step, as MMEngine's test_step defaults to val_step's way
        name, method = "validation_step", own_method(model, "validation_step")
    if method is not None:
        where = f"{type(model).__name__}.{name}"
        arity = step_arity(method, where)
        if mode == "train":
            warn_uncompiled_step(model, name)

        def own_step(batch: Any, batch_idx: int = 0) -> Any:
            outputs = (method(batch) if arity == 1 else method(batch, batch_idx) if arity == 2
                       else method(batch, batch_idx, 0))
            if isinstance(outputs, torch.Tensor):
                return {"loss": outputs}
            if outputs is None:  # train: skip the batch (Lightning's meaning); eval: no outputs
                return None if mode == "train" else {}
            if mode != "train" and isinstance(outputs, (list, tuple)):
                return list(outputs)  # data samples (MMEngine's val_step): the metrics get them
            if isinstance(outputs, Mapping) and (mode != "train" or "loss" in outputs):
                return dict(outputs)
            return other_outputs(outputs, where, mode)
        return own_step
    if mode == "train":
        def train_step(batch: Any, batch_idx: int = 0) -> dict[str, Any]:  # noqa: ARG001
            inputs, targets = split_batch(batch, model, mode)
            preds = model(inputs)
            if loss_fn is None:  # check_contract tells the user before a run gets here
                raise TypeError(f"{type(model).__name__} has no training_step(batch) and no "
                                "loss_fn was given")
            try:
                return {"loss": loss_fn(preds, targets)}
            except Exception as exc:  # the loss and its inputs named; nothing on the normal path
                raise loss_failure(loss_fn, preds, targets, exc) from exc
        return train_step

    def eval_step(batch: Any, batch_idx: int = 0) -> dict[str, Any]:  # noqa: ARG001
        inputs, targets = split_batch(batch, model, mode)
        preds = model(inputs)
        outputs = {"preds": preds, "targets": targets}
        if loss_fn is not None:
            try:
                outputs["loss"] = loss_fn(preds, targets)
            except Exception as exc:
                raise loss_failure(loss_fn, preds, targets, exc) from exc
        return outputs
    return eval_step


def make_train_step(model: torch.nn.Module, loss_fn: Callable[..., Any] | None,
                    optim_wrapper: OptimWrapperLike | None, ddp: torch.nn.Module | None = None
                    ) -> Callable[..., dict[str, Any]]:
    """The whole training step of one iteration: forward, loss, and the optimizer update.

    A model with MMEngine's ``train_step(data, optim_wrapper)`` runs its own
    update (e.g. a GAN stepping two optimizers) and returns what to log. On
    several processes (``ddp`` given) the gradients are averaged over the ranks:
    the unmodified compat ``BaseModel.train_step`` runs its loss forward through
    ``ddp`` (MMEngine's ``MMDistributedDataParallel.train_step``); any other own
    ``train_step`` gets them averaged before each optimizer step (:class:`OwnStepSync`).
    Otherwise the forward (``training_step`` or ``loss_fn``) runs under
    ``optim_wrapper.optim_context`` (autocast, DDP ``no_sync`` on micro-batches)
    and ``optim_wrapper.update_params(loss)`` follows; a ``training_step``
    that returns None skips the update (outputs ``{}``), as Lightning does.
    The returned ``step(batch, batch_idx=0)`` gets the batch's index in the epoch.
    """
    own = getattr(model, "train_step", None)
    if own is not None:
        warn_uncompiled_step(model, "train_step")
        if ddp is not None and uses_compat_train_step(model):
            return ddp_base_model_step(model, ddp, optim_wrapper)
        if isinstance(ddp, OwnStepSync):
            own = ddp.synced(own, optim_wrapper)
        return _own_update(model, own, optim_wrapper)
    if optim_wrapper is None:
        raise ConfigError("a training step needs an optimizer wrapper unless the model has "
                          "MMEngine's train_step(data, optim_wrapper)")
    forward: Callable[..., dict[str, Any] | None]
    if ddp is not None:
        net: torch.nn.Module = ddp

        def forward(batch: Any, batch_idx: int = 0) -> dict[str, Any]:
            outputs: dict[str, Any] = ddp(batch, batch_idx)  # StepModule.forward's dict
            return outputs
    else:
        net = model
        forward = make_step(model, loss_fn, "train")
    context = optim_wrapper.optim_context
    update = optim_wrapper.update_params
    source = loss_source(model, loss_fn)
    tensor = torch.Tensor

    def step(batch: Any, batch_idx: int = 0) -> dict[str, Any]:
        with context(net):
            outputs = forward(batch, batch_idx)
        if outputs is None:  # training_step returned None: skip this batch's update
            return {}
        loss = outputs["loss"]
        if loss.__class__ is not tensor or loss.dim():  # a type test and a dim(): no sync
            if loss is None:
                raise TypeError(none_loss_message(source, batch))
            check_loss_value(loss, source, loss_fn)  # one number, or one clear error
        update(loss)
        return outputs
    return step


def other_outputs(outputs: Any, where: str, mode: str) -> dict[str, Any]:
    """A step's outputs that are not a dict: a dataclass's fields (a model's output
    object, e.g. ``Output(loss=..., logits=...)``), else a TypeError saying what is accepted."""
    fields = fields_of(outputs)
    if fields is not None and (mode != "train" or "loss" in fields):
        return fields
    raise TypeError(
        f"{where} must return a loss tensor or a dict with a 'loss' entry (plus anything to "
        "log; a Mapping or a dataclass with a 'loss' field counts as that dict)"
        + (", or None to skip the batch" if mode == "train"
           else ", a list of data samples, or None")
        + f", got {_got(outputs)}"
    )


def loss_source(model: torch.nn.Module, loss_fn: Callable[..., Any] | None) -> str:
    """What computes the training loss, for messages: ``Net.training_step`` or ``loss_fn``."""
    if own_method(model, "training_step") is not None:
        return f"{type(model).__name__}.training_step"
    return "loss_fn" if loss_fn is not None else f"{type(model).__name__}'s training step"


def none_loss_message(source: str, batch: Any) -> str:
    """The error for a loss that is None (a Hugging Face-style forward without labels)."""
    keys = (f"; the batch has keys {sorted(map(str, batch))}" if isinstance(batch, Mapping)
            else "")
    return (f"{source} returned a loss of None, which cannot be trained on: are the labels "
            f"missing from the batch (a model's forward returns loss=None without them)?{keys}")


def fields_of(outputs: Any) -> dict[str, Any] | None:
    """A dataclass instance's fields as a dict (shallow: the tensors themselves), else None."""
    if dataclasses.is_dataclass(outputs) and not isinstance(outputs, type):
        return {f.name: getattr(outputs, f.name) for f in dataclasses.fields(outputs)}
    return None


def _got(outputs: Any) -> str:
    """``dict with keys [...]`` for a mapping, else the type's name (for error messages)."""
    keys = list(outputs) if isinstance(outputs, Mapping) else fields_of(outputs)
    if keys is None:
        return type(outputs).__name__
    return f"{type(outputs).__name__} with keys {list(keys)}"


def warn_uncompiled_step(model: Any, name: str) -> None:
    """Warn when a compiled model's step method would run the uncompiled module.

    ``torch.compile(net)`` compiles ``net.forward`` only; ``training_step`` is
    looked up on the inner module, whose ``self(...)`` is the plain forward.
    """
    module = unwrapped_model(model)
    if module is not model:
        inner = type(module).__name__
        warnings.warn(
            f"the model is torch.compile({inner}), but {inner}.{name} runs on the uncompiled "
            f"module (torch.compile compiles forward only; {name} calls self(...) on "
            f"{inner}): nothing is compiled. Compile inside the module instead, e.g. "
            "self.net = torch.compile(self.net) in __init__, and pass the plain module",
            UserWarning, stacklevel=3)


def _own_update(model: torch.nn.Module, own: Callable[..., Any],
                optim_wrapper: OptimWrapperLike | None) -> Callable[..., dict[str, Any]]:
    """The step around a model's own ``train_step(data, optim_wrapper)``: what it returns
    as a dict of values to log."""
    def model_update(batch: Any, batch_idx: int = 0) -> dict[str, Any]:  # noqa: ARG001
        outputs = own(batch, optim_wrapper)
        if isinstance(outputs, torch.Tensor):
            return {"loss": outputs}
        if not isinstance(outputs, Mapping):
            raise TypeError(f"{type(model).__name__}.train_step(data, optim_wrapper) must "
                            f"return a dict of values to log, got {type(outputs).__name__}")
        return dict(outputs)
    return model_update


def wrap_for_training(model: torch.nn.Module, loss_fn: Callable[..., Any] | None,
                      device: torch.device, ddp_kwargs: Mapping[str, Any] | None = None
                      ) -> torch.nn.Module:
    """What a multi-process run trains through (``runner.ddp_model``).

    DistributedDataParallel around a :class:`StepModule` (``training_step`` /
    ``loss_fn`` models) or around the model itself (compat ``BaseModel`` with
    its unmodified ``train_step``); for any other own ``train_step``, an
    :class:`OwnStepSync` (which ignores the DDP-only ``ddp_kwargs``).
    """
    kwargs = dict(ddp_kwargs or {})
    if getattr(model, "train_step", None) is None:
        return distributed.wrap_ddp(StepModule(model, loss_fn), device, **kwargs)
    if uses_compat_train_step(model):
        return distributed.wrap_ddp(model, device, **kwargs)
    return OwnStepSync(model, broadcast_buffers=kwargs.get("broadcast_buffers", True))


def trainable(model: torch.nn.Module) -> tuple[bool, ...]:
    """Which of ``model``'s parameters need a gradient, in order: what DDP's reducer was built
    for (it synchronises those only)."""
    return tuple(param.requires_grad for param in model.parameters())


def run_step(model: torch.nn.Module, loss_fn: Callable[..., Any] | None, batch: Any, mode: str
             ) -> Any:
    """One step of ``mode`` on ``batch``; returns the outputs dict (see :func:`make_step`)."""
    return make_step(model, loss_fn, mode)(batch, 0)


def split_batch(batch: Any, model: torch.nn.Module, mode: str = "train") -> tuple[Any, Any]:
    """``(inputs, targets)`` of a batch the Runner's own step computes on; a TypeError naming
    the step method the model lacks for ``mode`` otherwise."""
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    method = "validation_step (or test_step)" if mode == "test" else _METHODS[mode]
    if isinstance(batch, Mapping):
        raise TypeError(
            f"batches must be (inputs, targets) pairs, got dict (keys {sorted(map(str, batch))}); "
            f"{type(model).__name__} has no {method}(batch) to take them, and loss_fn= "
            "computes loss_fn(model(inputs), targets) on pairs only. For dict batches "
            f"(Hugging Face style), define {_DICT_STEP[mode]}"
        )
    raise TypeError(
        f"batches must be (inputs, targets) pairs, got {type(batch).__name__}; "
        f"{type(model).__name__} has no {method}(batch) to take them ({mode}: add one, or "
        "collate the batches into pairs)"
    )


#: the step method to write for dict batches, by mode (error messages)
_DICT_STEP = {
    "train": "training_step(self, batch, batch_idx) returning the loss, e.g. "
             "return self(**batch).loss (or a dict with a 'loss' entry)",
    "val": "validation_step(self, batch, batch_idx) returning e.g. {'loss': out.loss, "
           "'preds': out.logits, 'targets': batch['labels']} with out = self(**batch)",
}
_DICT_STEP["test"] = _DICT_STEP["val"]


def check_contract(model: torch.nn.Module, loss_fn: Callable[..., Any] | None) -> None:
    """Fail early when the model cannot be trained with what was given."""
    if loss_fn is None and own_method(model, "training_step") is None \
            and not hasattr(model, "train_step"):
        raise ConfigError(
            f"{type(model).__name__} has no training_step(batch) (nor MMEngine's "
            "train_step(data, optim_wrapper)). For (inputs, targets) batches, pass loss_fn= "
            "(e.g. torch.nn.CrossEntropyLoss()) so the Runner computes loss_fn(model(x), y); "
            "for dict batches (Hugging Face style, forward(**batch) returning the loss), define "
            "training_step(self, batch, batch_idx) returning the loss, e.g. "
            "return self(**batch).loss (or a dict with a 'loss' entry)"
        )


class StepModule(torch.nn.Module):
    """What DistributedDataParallel wraps, so that gradients sync for either contract.

    Only training goes through it (evaluation needs no gradient sync).
    """

    def __init__(self, model: torch.nn.Module, loss_fn: Callable[..., Any] | None) -> None:
        super().__init__()
        self.module = model
        self.train_forward = make_step(model, loss_fn, "train")

    def forward(self, batch: Any, batch_idx: int = 0) -> dict[str, Any]:
        outputs: dict[str, Any] | None = self.train_forward(batch, batch_idx)
        if outputs is None:  # Lightning does not support it with several processes either
            raise RuntimeError(f"{type(self.module).__name__}.training_step returned None (skip "
                               "the batch), which a multi-process run cannot do: every rank "
                               "must run the backward; return e.g. loss * 0 instead")
        return outputs
