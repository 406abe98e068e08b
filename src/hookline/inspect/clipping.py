"""Gradient clipping and editing through ``Tensor.register_hook``.

The hooks act on each parameter's gradient as backward computes it, before
it is accumulated into ``.grad``; so clipping is **per parameter and per
backward pass** (with gradient accumulation, each micro-batch's contribution
is clipped). For clipping by the global norm over all parameters, call
``torch.nn.utils.clip_grad_norm_`` after backward instead.

Example::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect import clip_gradients, edit_gradients
    >>> net = nn.Linear(4, 2)
    >>> with clip_gradients(net, max_value=0.01):
    ...     (net(torch.ones(3, 4)) * 100).sum().backward()
    >>> round(float(net.weight.grad.abs().max()), 6)
    0.01
    >>> net.zero_grad()
    >>> with edit_gradients(net, lambda name, grad: grad * 0 if name == "bias" else None, names=True):
    ...     net(torch.ones(3, 4)).sum().backward()
    >>> float(net.bias.grad.abs().sum())
    0.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError, HandleGroup

from ._register import hook_tensor


def named_params(model_or_params: Any) -> list[tuple[str, torch.Tensor]]:
    """``(name, tensor)`` for the tensors that require grad: from a module, a tensor, or an iterable
    of tensors or ``(name, tensor)`` pairs; each tensor once."""
    items: list[tuple[str, torch.Tensor]]
    if isinstance(model_or_params, nn.Module):
        items = list(model_or_params.named_parameters())
    elif isinstance(model_or_params, torch.Tensor):
        items = [("tensor", model_or_params)]
    elif isinstance(model_or_params, Iterable):
        items = []
        for i, item in enumerate(model_or_params):
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], torch.Tensor):
                items.append((str(item[0]), item[1]))
            elif isinstance(item, torch.Tensor):
                items.append((f"param{i}", item))
            else:
                raise ConfigError(f"expected tensors or (name, tensor) pairs, got {type(item).__name__}")
    else:
        raise ConfigError(f"expected a module, a tensor or an iterable of parameters, "
                          f"got {type(model_or_params).__name__}")
    seen: set[int] = set()
    found: list[tuple[str, torch.Tensor]] = []
    for name, tensor in items:
        if tensor.requires_grad and id(tensor) not in seen:
            seen.add(id(tensor))
            found.append((name, tensor))
    if not found:
        raise ConfigError("no tensor that requires grad to hook")
    return found


def edit_gradients(model_or_params: Any, fn: Callable[..., torch.Tensor | None], *,
                   names: bool = False) -> HandleGroup:
    """Register ``fn`` on every parameter's gradient; returns a :class:`~hookline.core.HandleGroup`.

    ``fn(grad)`` (or ``fn(name, grad)`` with ``names=True``) returns a new
    gradient, or None to keep it. It must not modify ``grad`` in place.
    """
    if not callable(fn):
        raise ConfigError(f"edit_gradients needs a callable, got {fn!r}")
    group = HandleGroup()
    for name, param in named_params(model_or_params):
        hook = (lambda grad, name=name: fn(name, grad)) if names else fn
        group.add(hook_tensor(param, hook, "tensor", name))
    return group


def clip_gradients(model_or_params: Any, max_norm: float | None = None,
                   max_value: float | None = None) -> HandleGroup:
    """Clip each parameter's gradient as backward computes it; returns the handles.

    Args:
        model_or_params: a module, a tensor, or an iterable of parameters.
        max_norm: scale a gradient whose L2 norm exceeds this down to it.
        max_value: clamp every element into ``[-max_value, max_value]``
            (applied before ``max_norm`` when both are given).

    No host synchronisation happens: the scale is computed on the device.
    """
    for label, value in (("max_norm", max_norm), ("max_value", max_value)):
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                                  or not math.isfinite(value) or value <= 0):
            raise ConfigError(f"{label} must be a positive finite number or None, got {value!r}")
    if max_norm is None and max_value is None:
        raise ConfigError("clip_gradients needs max_norm, max_value or both")

    def clip(grad: torch.Tensor) -> torch.Tensor:
        if max_value is not None:
            grad = grad.clamp(-max_value, max_value)
        if max_norm is not None:
            norm = torch.linalg.vector_norm(grad.float())
            grad = grad * (max_norm / (norm + 1e-6)).clamp(max=1.0).to(grad.dtype)
        return grad

    return edit_gradients(model_or_params, clip)
