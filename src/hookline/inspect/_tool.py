"""The base of every inspect tool: a set of hook handles, removed together.

A tool registers its hooks when it is built and removes all of them on
``remove()`` or at the end of a ``with`` block; what it measured stays
readable afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import nn

from hookline.core import HandleGroup, HookHandle

from ._register import hook_module, hook_tensor

T = TypeVar("T", bound="HookTool")


class HookTool:
    """Holds the handles of one tool; ``remove()`` or ``with`` takes every hook off."""

    def __init__(self) -> None:
        self._handles = HandleGroup()

    def _hook_module(self, module: nn.Module, fn: Callable, kind: str = "forward", name: str = "",
                     **options: Any) -> HookHandle:
        return self._handles.add(hook_module(module, fn, kind, name, **options))

    def _hook_tensor(self, tensor: torch.Tensor, fn: Callable, kind: str = "tensor",
                     name: str = "") -> HookHandle:
        return self._handles.add(hook_tensor(tensor, fn, kind, name))

    @property
    def attached(self) -> bool:
        """True while at least one of the tool's hooks is registered."""
        return any(not getattr(h, "removed", False) for h in self._handles)

    def remove(self) -> None:
        """Remove every hook this tool added (idempotent); results stay readable."""
        self._handles.remove()

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()
