"""The base of every inspect tool: a set of hook handles, removed together.

A tool registers its hooks when it is built and removes all of them on
``remove()`` or at the end of a ``with`` block; what it measured stays
readable afterwards.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import nn

from hookline.core import HandleGroup, HookHandle

from ._register import hook_module, hook_tensor

T = TypeVar("T", bound="HookTool")


class HookTool:
    """Holds the handles of one tool; ``remove()`` or ``with`` takes every hook off.

    All or nothing: when a tool's ``__init__`` fails after some hooks went on
    (a layer torch cannot hook), those come off before the error leaves it.
    """

    def __init__(self) -> None:
        self._handles = HandleGroup()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def all_or_nothing(self: HookTool, *args: Any, **kw: Any) -> None:
            try:
                init(self, *args, **kw)
            except BaseException:
                handles = getattr(self, "_handles", None)
                if handles is not None:
                    handles.remove()
                raise

        setattr(cls, "__init__", all_or_nothing)

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
