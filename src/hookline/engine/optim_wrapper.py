"""``OptimWrapper``: backward, gradient clipping, accumulation and the optimizer step, as one object.

MMEngine's object model: the train loop runs the step (or the model runs it
in ``train_step(data, optim_wrapper)``) *before* the ``after_train_iter``
hooks, so every hook there sees the updated weights. :class:`AmpOptimWrapper`
adds mixed precision, :class:`OptimWrapperDict` holds several wrappers.

Events on every wrapper (:class:`hookline.core.Event`, nothing to pay while
none is registered): ``before_update(loss)``, ``before_backward(loss)``,
``after_backward()``, ``before_step()`` and ``before_zero_grad()`` (the
points of Lightning's ``on_before_backward`` ... ``on_before_zero_grad``).

Example::

    >>> import torch
    >>> from hookline.engine.optim_wrapper import OptimWrapper
    >>> model = torch.nn.Linear(2, 1)
    >>> wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1),
    ...                        accumulative_counts=2, clip_grad={"max_norm": 1.0})
    >>> wrapper.initialize_count_status(model, 0, 4)
    >>> for _ in range(2):
    ...     with wrapper.optim_context(model):
    ...         loss = model(torch.ones(1, 2)).sum()
    ...     wrapper.update_params(loss)
    >>> wrapper.should_update(), wrapper.get_lr()
    (True, {'lr': [0.1]})
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Protocol

import torch

from hookline.core import ConfigError, Event

from .checks import boolean, finite_positive_float, positive_int
from .registries import OPTIM_WRAPPERS

_CLIP_NORM_KEYS = {"max_norm", "norm_type", "error_if_nonfinite", "foreach"}
#: the methods :meth:`OptimWrapper.update_params` runs through; while a subclass or the instance
#: replaces none of them it may run the update in one frame
_STEP_METHODS = frozenset({"backward", "step", "zero_grad", "scale_loss", "should_update"})


class OptimWrapperLike(Protocol):
    """What the Runner, its loops and checkpoints ask of ``runner.optim_wrapper``:
    :class:`OptimWrapper` (and :class:`AmpOptimWrapper`) and
    :class:`~hookline.engine.optim_wrapper_dict.OptimWrapperDict` all provide it."""

    message_hub: Any

    @property
    def param_groups(self) -> Any:
        """The optimizer's param groups (a list); ``{name: groups}`` for several optimizers."""
        ...

    def update_params(self, loss: torch.Tensor) -> None: ...

    def optim_context(self, model: torch.nn.Module) -> contextlib.AbstractContextManager[Any]: ...

    def autocast(self) -> contextlib.AbstractContextManager[Any]: ...

    def initialize_count_status(self, model: torch.nn.Module | None, init_counts: int,
                                max_counts: int) -> None: ...

    def should_step_schedulers(self) -> bool: ...

    def get_lr(self) -> dict[str, list[float]]: ...

    def get_momentum(self) -> dict[str, list[float]]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None: ...

    def pending_grads(self) -> object:
        """Gradients of an unfinished accumulation group (checkpointed as is), or None."""
        ...

    def restore_grads(self, grads: Any) -> bool: ...


def check_clip_grad(clip_grad: Any, where: str = "clip_grad") -> dict[str, Any] | None:
    """Normalise ``clip_grad`` to ``{"type": "norm", "max_norm": ...}`` or ``{"type": "value", ...}``.

    Accepted: MMEngine's ``{max_norm, norm_type}`` / ``{type: "value", clip_value}``
    and mmcv's ``grad_clip`` spelling ``{max_value: x}``; ``max_norm`` and
    ``clip_value`` are finite numbers > 0. Errors name the argument as ``where``.

    Example::

        >>> check_clip_grad({"max_norm": 35, "norm_type": 2})
        {'type': 'norm', 'max_norm': 35, 'norm_type': 2}
        >>> check_clip_grad({"max_value": 0.5})
        {'type': 'value', 'clip_value': 0.5}
        >>> check_clip_grad({"max_norm": -1.0})
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: clip_grad.max_norm must be a finite number > 0, got -1.0
    """
    if clip_grad is None:
        return None
    shapes = ("{'max_norm': x} (optionally 'norm_type'), {'type': 'value', 'clip_value': x} "
              "or {'max_value': x}")
    if not isinstance(clip_grad, Mapping):
        raise ConfigError(f"{where} must be a dict such as {shapes}, got {clip_grad!r}")
    cfg = dict(clip_grad)
    if "max_value" in cfg and set(cfg) == {"max_value"}:
        cfg = {"type": "value", "clip_value": cfg["max_value"]}
    kind = cfg.pop("type", "norm")
    if kind == "norm" and "max_norm" in cfg and set(cfg) <= _CLIP_NORM_KEYS:
        finite_positive_float(cfg["max_norm"], f"{where}.max_norm")
        norm_type = cfg.get("norm_type", 2)
        if norm_type not in ("inf", float("inf")):
            finite_positive_float(norm_type, f"{where}.norm_type")
        for flag in ("error_if_nonfinite", "foreach"):
            boolean(cfg.get(flag), f"{where}.{flag}", allow_none=True)
        return {"type": "norm", **cfg}
    if kind == "value" and set(cfg) == {"clip_value"}:
        finite_positive_float(cfg["clip_value"], f"{where}.clip_value")
        return {"type": "value", **cfg}
    raise ConfigError(f"{where} must be {shapes}, got {dict(clip_grad)!r}")


#: a reusable do-nothing context (``nullcontext`` may be entered any number of times)
_NO_CONTEXT: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()


class _Nested:
    """Two contexts entered in order and left in reverse (cheaper than an ExitStack)."""

    __slots__ = ("inner", "outer")

    def __init__(self, outer: contextlib.AbstractContextManager[Any],
                 inner: contextlib.AbstractContextManager[Any]) -> None:
        self.outer, self.inner = outer, inner

    def __enter__(self) -> None:
        self.outer.__enter__()
        try:
            self.inner.__enter__()
        except BaseException:
            self.outer.__exit__(None, None, None)
            raise

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self.inner.__exit__(*exc_info)
        finally:
            self.outer.__exit__(*exc_info)


@OPTIM_WRAPPERS.register()
class OptimWrapper:
    """Runs ``backward``, clipping, ``step`` and ``zero_grad`` for one optimizer.

    Args:
        optimizer: a ``torch.optim.Optimizer``.
        accumulative_counts: step every ``accumulative_counts`` calls of
            :meth:`update_params`, averaging the loss over the group; the
            last, shorter group of a count span (an epoch in epoch-based
            runs, the run in iteration-based ones) is averaged over its own size.
        clip_grad: see :func:`check_clip_grad`; by norm, the total gradient norm (before
            clipping) goes to ``message_hub`` as ``train/grad_norm`` when the
            Runner has set :attr:`message_hub`. Only parameters with
            ``requires_grad`` are clipped and counted (MMEngine's rule): a
            parameter frozen after its gradient was computed keeps that gradient.

    Going on past the span :meth:`initialize_count_status` set (more
    :meth:`update_params` calls than ``max_counts``) with ``accumulative_counts``
    above 1 is a ``RuntimeError`` naming the fix (MMEngine asserts there when
    ``max_counts`` is a multiple of ``accumulative_counts`` and scales the loss
    by the remainder otherwise).
    """

    def __init__(self, optimizer: torch.optim.Optimizer, accumulative_counts: int = 1,
                 clip_grad: Mapping[str, Any] | None = None) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise ConfigError(f"{type(self).__name__} needs a torch.optim.Optimizer, got "
                              f"{optimizer!r}")
        self.optimizer = optimizer
        self.accumulative_counts = positive_int(accumulative_counts, "accumulative_counts")
        self.clip_grad = check_clip_grad(clip_grad)
        #: where ``train/grad_norm`` goes (the Runner sets it to ``runner.message_hub``)
        self.message_hub: Any = None
        #: fired with the (unscaled) loss before every backward of :meth:`update_params`;
        #: a hook raising here stops the update before the weights see that loss
        self.before_update = Event("before_update")
        #: fired in :meth:`backward` with the loss about to be back-propagated (divided for
        #: accumulation, and multiplied by the loss scale under AMP): Lightning's
        #: ``on_before_backward`` point
        self.before_backward = Event("before_backward")
        #: fired in :meth:`backward` once the gradients are in (``on_after_backward``)
        self.after_backward = Event("after_backward")
        #: fired in :meth:`step` before clipping and the optimizer's step, with the gradients
        #: unscaled under AMP (``on_before_optimizer_step``)
        self.before_step = Event("before_step")
        #: fired in :meth:`zero_grad` before the gradients are cleared (``on_before_zero_grad``)
        self.before_zero_grad = Event("before_zero_grad")
        self._inner_count = 0
        self._max_counts = -1
        self._attributes = len(self.__dict__)  # more later: check for a replaced method

    #: whether this class runs :meth:`update_params` through OptimWrapper's own step methods
    _stock_methods = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._stock_methods = all(getattr(cls, name) is getattr(OptimWrapper, name)
                                 for name in _STEP_METHODS)

    # -- the step ------------------------------------------------------------------------------
    def update_params(self, loss: torch.Tensor, step_kwargs: dict[str, Any] | None = None,
                      zero_kwargs: dict[str, Any] | None = None) -> None:
        """Scale ``loss`` for accumulation, backward, and step + zero_grad when a group ends.

        In the common case (one backward per step, no clipping, no hook on the
        wrapper's events, no step method replaced by a subclass or on the
        instance) this makes the same three calls in one frame:
        ``loss.backward()``, ``optimizer.step()``,
        ``optimizer.zero_grad(set_to_none=True)``.
        """
        if (self._stock_methods and self.accumulative_counts == 1 and self.clip_grad is None
                and not (step_kwargs or zero_kwargs or self.before_update or self.before_backward
                         or self.after_backward or self.before_step or self.before_zero_grad)
                and (len(self.__dict__) == self._attributes or self._no_method_replaced())):
            loss.backward()  # type: ignore[no-untyped-call]  # torch leaves it unannotated
            self._inner_count += 1
            optimizer = self.optimizer
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            return
        self.before_update.emit(loss)
        self.backward(self.scale_loss(loss))
        if self.should_update():
            self.step(**(step_kwargs or {}))
            self.zero_grad(**(zero_kwargs or {}))

    def _no_method_replaced(self) -> bool:
        """Whether no step method is set on the instance (asked again only once the instance
        gains attributes: the Runner sets ``message_hub`` after ``__init__``)."""
        if _STEP_METHODS.intersection(self.__dict__):
            return False
        self._attributes = len(self.__dict__)
        return True

    def backward(self, loss: torch.Tensor, **kwargs: Any) -> None:
        """``loss.backward()``; counts one call towards the accumulation group."""
        self.before_backward.emit(loss)
        loss.backward(**kwargs)  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward unannotated
        self._inner_count += 1
        self.after_backward.emit()

    def step(self, **kwargs: Any) -> None:
        """Clip (when configured) and step the optimizer."""
        self.before_step.emit()
        if self.clip_grad is not None:
            self._clip()
        self.optimizer.step(**kwargs)

    def zero_grad(self, **kwargs: Any) -> None:
        """``optimizer.zero_grad`` (``set_to_none=True`` unless given)."""
        kwargs.setdefault("set_to_none", True)
        self.before_zero_grad.emit()
        self.optimizer.zero_grad(**kwargs)

    def _clip(self) -> torch.Tensor | None:
        """Clip the gradients; by norm, also the total norm before clipping (into the message
        hub as ``train/grad_norm``, as MMEngine's); by value, nothing to report (None)."""
        assert self.clip_grad is not None
        params = [p for group in self.optimizer.param_groups for p in group["params"]
                  if p.requires_grad and p.grad is not None]
        args = {k: v for k, v in self.clip_grad.items() if k != "type"}
        if self.clip_grad["type"] != "norm":
            torch.nn.utils.clip_grad_value_(params, args["clip_value"])
            return None
        norm = torch.nn.utils.clip_grad_norm_(params, **args)
        if self.message_hub is not None:
            self.message_hub.update("train/grad_norm", norm)
        return norm

    # -- accumulation --------------------------------------------------------------------------
    def initialize_count_status(self, model: torch.nn.Module | None,  # noqa: ARG002  (MMEngine's API)
                                init_counts: int, max_counts: int) -> None:
        """Start counting at ``init_counts`` of ``max_counts`` calls (the loop calls this)."""
        self._inner_count = int(init_counts)
        self._max_counts = int(max_counts)

    @property
    def _accumulative_counts(self) -> int:
        """MMEngine's name of :attr:`accumulative_counts` (read by ported code, e.g. mmagic's
        ``BaseGAN``); read-only: the group size is fixed when the wrapper is built."""
        return self.accumulative_counts

    @property
    def inner_count(self) -> int:
        """:meth:`backward` calls counted so far in the current span."""
        return self._inner_count

    @property
    def max_counts(self) -> int:
        return self._max_counts

    def _group(self, position: int) -> tuple[int, int]:
        """(first position, size) of the accumulation group ``position`` falls in (a call past
        the span is a group of its own)."""
        n, end = self.accumulative_counts, self._max_counts
        if 0 <= end <= position:
            return position, 1
        start = position - position % n
        return start, (n if end < 0 else min(n, end - start))

    def scale_loss(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss`` divided by the size of the accumulation group it belongs to."""
        if self.accumulative_counts == 1:
            return loss
        if 0 <= self._max_counts <= self._inner_count:
            raise RuntimeError(
                f"{type(self).__name__}: update {self._inner_count + 1} of a span of "
                f"{self._max_counts} (initialize_count_status(model, init_counts, max_counts) "
                "counts one update per iteration; accumulation groups end at max_counts). "
                "A model that updates this wrapper several times per iteration calls "
                "optim_wrapper.initialize_count_status(model, 0, <its updates>) itself before "
                "them (mmagic's generator loop), or keeps accumulative_counts=1")
        return loss / self._group(self._inner_count)[1]

    def should_update(self) -> bool:
        """After :meth:`backward`: whether this call ended a group (so the optimizer stepped)."""
        if self.accumulative_counts == 1:
            return True
        start, size = self._group(self._inner_count - 1)
        return self._inner_count == start + size

    def should_sync(self) -> bool:
        """Before :meth:`backward`: whether the coming backward ends a group (DDP all-reduces)."""
        if self.accumulative_counts == 1:
            return True
        start, size = self._group(self._inner_count)
        return self._inner_count + 1 == start + size

    # -- contexts ----------------------------------------------------------------------------------
    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """The precision context of forward passes: none here (see :class:`AmpOptimWrapper`)."""
        return _NO_CONTEXT

    def optim_context(self, model: torch.nn.Module) -> contextlib.AbstractContextManager[Any]:
        """Wrap a training forward: skip DDP's all-reduce on micro-batches that do not end
        an accumulation group, and autocast under AMP.

        Runs every iteration, so the common case costs nothing: without a
        micro-batch to keep local it is :meth:`autocast` itself (a shared
        ``nullcontext`` for a plain wrapper).
        """
        if self.accumulative_counts > 1 and not self.should_sync():
            no_sync = getattr(model, "no_sync", None)
            if no_sync is not None:
                return _Nested(no_sync(), self.autocast())
        return self.autocast()

    # -- reading ---------------------------------------------------------------------------------
    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return self.optimizer.param_groups

    @property
    def defaults(self) -> dict[str, Any]:
        return self.optimizer.defaults

    def get_lr(self) -> dict[str, list[float]]:
        """``{"lr": [lr of each param group]}`` (MMEngine's shape)."""
        return {"lr": [group["lr"] for group in self.param_groups]}

    def get_momentum(self) -> dict[str, list[float]]:
        """``{"momentum": [...]}``: SGD's ``momentum`` or Adam's ``betas[0]`` (0 when neither)."""
        values = []
        for group in self.param_groups:
            if "momentum" in group:
                values.append(group["momentum"])
            elif "betas" in group:
                values.append(group["betas"][0])
            else:
                values.append(0)
        return {"momentum": values}

    def should_step_schedulers(self) -> bool:
        """Whether per-iteration schedulers step now: only on iterations the optimizer stepped."""
        return self.should_update()

    # -- state -------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state dict (what checkpoints hold as ``optimizer``)."""
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state_dict)

    def pending_grads(self) -> list[torch.Tensor | None] | None:
        """Gradients of an unfinished accumulation group (for exact resume), else None."""
        if self.accumulative_counts == 1:
            return None
        grads = [p.grad for group in self.param_groups for p in group["params"]]
        if all(g is None for g in grads):
            return None
        return [None if g is None else g.detach().clone() for g in grads]

    def restore_grads(self, grads: list[torch.Tensor | None]) -> bool:
        """Put back what :meth:`pending_grads` returned; False when the parameters differ."""
        params = [p for group in self.param_groups for p in group["params"]]
        if len(grads) != len(params) or any(
                g is not None and g.shape != p.shape for p, g in zip(params, grads)):
            return False
        for param, grad in zip(params, grads):
            param.grad = None if grad is None else grad.to(param.device, param.dtype)
        return True

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(optimizer={type(self.optimizer).__name__}, "
                f"accumulative_counts={self.accumulative_counts}, clip_grad={self.clip_grad})")
