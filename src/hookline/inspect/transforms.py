"""transform_inputs / transform_outputs: change what a module receives or returns, removably.

Example (input normalisation)::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect import transform_inputs, transform_outputs
    >>> net = nn.Identity()
    >>> mean, std = torch.tensor([0.5]), torch.tensor([0.25])
    >>> with transform_inputs(net, lambda x: (x - mean) / std):
    ...     net(torch.tensor([1.0]))
    tensor([2.])
    >>> with transform_outputs(net, lambda out: out.clamp(max=0.5)):
    ...     net(torch.tensor([1.0]))
    tensor([0.5000])
    >>> net(torch.tensor([1.0]))   # both removed
    tensor([1.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from hookline.core import ConfigError, HookHandle

from ._register import hook_module


def _check(module: Any, fn: Any, what: str) -> None:
    if not isinstance(module, nn.Module):
        raise ConfigError(f"{what} expects an nn.Module, got {type(module).__name__}")
    if not callable(fn):
        raise ConfigError(f"{what} needs a callable, got {fn!r}")


def transform_inputs(module: nn.Module, fn: Callable[..., Any], *, prepend: bool = False) -> HookHandle:
    """Replace ``module``'s positional inputs with ``fn(*inputs)`` (a forward pre-hook).

    ``fn`` returns the new input (one input) or a tuple of new inputs;
    returning None keeps the inputs. Keyword inputs pass through unchanged.
    The returned handle removes the transform (also as a context manager).
    An exception in ``fn`` is a :class:`~hookline.core.HookError` naming it.
    """
    _check(module, fn, "transform_inputs")

    def pre_hook(_mod: nn.Module, args: tuple[Any, ...]) -> Any:
        result = fn(*args)
        if result is None:
            return None
        return result if isinstance(result, tuple) else (result,)

    return hook_module(module, pre_hook, "forward_pre", prepend=prepend, report_as=fn)


def transform_outputs(module: nn.Module, fn: Callable[[Any], Any], *, prepend: bool = False) -> HookHandle:
    """Replace ``module``'s output with ``fn(output)`` (a forward hook; None keeps the output).

    The returned handle removes the transform (also as a context manager).
    """
    _check(module, fn, "transform_outputs")

    def post_hook(_mod: nn.Module, _args: tuple[Any, ...], output: Any) -> Any:
        return fn(output)

    return hook_module(module, post_hook, "forward", prepend=prepend, report_as=fn)
