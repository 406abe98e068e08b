"""Register torch module and tensor hooks as hookline handles, and undo them exactly.

torch's own ``RemovableHandle.remove()`` deletes the hook but leaves two traces
behind: a tensor's ``_backward_hooks`` / ``_post_accumulate_grad_hooks`` turn
from ``None`` into an empty dict, and a module's ``_is_full_backward_hook``
flag stays ``True``. The handles made here put those back too, so after
``remove()`` a module or tensor is as it was before hookline touched it.

Example::

    >>> import torch
    >>> from hookline.inspect._register import hook_module
    >>> lin = torch.nn.Linear(2, 2)
    >>> with hook_module(lin, lambda m, args, out: out * 0, "forward"):
    ...     float(lin(torch.ones(1, 2)).detach().abs().sum())
    0.0
    >>> len(lin._forward_hooks)
    0
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError, HookHandle

#: kind -> (torch method, keyword options that method accepts)
MODULE_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "forward": ("register_forward_hook", ("prepend", "with_kwargs", "always_call")),
    "forward_pre": ("register_forward_pre_hook", ("prepend", "with_kwargs")),
    "backward": ("register_full_backward_hook", ("prepend",)),
    "backward_pre": ("register_full_backward_pre_hook", ("prepend",)),
}
#: kind -> (tensor method, tensor attribute holding its hooks)
TENSOR_KINDS: dict[str, tuple[str, str]] = {
    "tensor": ("register_hook", "_backward_hooks"),
    "post_accumulate_grad": ("register_post_accumulate_grad_hook", "_post_accumulate_grad_hooks"),
}
KINDS: tuple[str, ...] = (*MODULE_KINDS, *TENSOR_KINDS)


class _Marks:
    """Objects (by identity, weakly held) whose hook state hookline created."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[Any]] = {}

    def add(self, obj: Any) -> None:
        key = id(obj)

        def forget(_ref: weakref.ref[Any]) -> None:
            self._refs.pop(key, None)

        self._refs[key] = weakref.ref(obj, forget)

    def pop(self, obj: Any) -> bool:
        ref = self._refs.get(id(obj))
        if ref is None or ref() is not obj:
            return False
        del self._refs[id(obj)]
        return True


_created_dicts = _Marks()      # tensor hook dicts that were None before hookline
_flagged_modules = _Marks()    # modules whose _is_full_backward_hook was None before hookline


def check_kind(kind: str) -> None:
    """Raise :class:`ConfigError` unless ``kind`` is a known hook kind."""
    if kind not in KINDS:
        raise ConfigError.unknown("hook kind", kind, KINDS)


def check_options(kind: str, options: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` for an option torch does not take for ``kind``."""
    accepted = MODULE_KINDS[kind][1] if kind in MODULE_KINDS else ()
    for option in options:
        if option not in accepted:
            if not accepted:
                raise ConfigError(f"hook kind {kind!r} takes no options, got {option!r}")
            raise ConfigError.unknown(f"option for hook kind {kind!r}", option, accepted)


def hook_module(module: nn.Module, fn: Callable, kind: str = "forward", name: str = "",
                **options: Any) -> HookHandle:
    """Register ``fn`` on ``module`` with torch's hook API for ``kind``; returns a handle.

    ``options`` are torch's own (``prepend``, ``with_kwargs``, ``always_call``).
    """
    check_kind(kind)
    if kind not in MODULE_KINDS:
        raise ConfigError(f"hook kind {kind!r} needs a tensor, got a {type(module).__name__} module")
    check_options(kind, options)
    method, _accepted = MODULE_KINDS[kind]
    backward = kind.startswith("backward")
    # The private torch state below is what the module docstring says remove() restores.
    if backward and module._is_full_backward_hook is None:  # noqa: SLF001
        _flagged_modules.add(module)
    if kind == "backward_pre":  # torch takes prepend positionally here
        handle = module.register_full_backward_pre_hook(fn, options.get("prepend", False))
    elif kind == "backward":
        handle = module.register_full_backward_hook(fn, options.get("prepend", False))
    else:
        handle = getattr(module, method)(fn, **options)

    def remover() -> None:
        handle.remove()
        no_backward_hooks = not module._backward_hooks and not module._backward_pre_hooks  # noqa: SLF001
        if backward and no_backward_hooks and _flagged_modules.pop(module):
            module._is_full_backward_hook = None  # noqa: SLF001

    return HookHandle(remover, fn, f"{name or type(module).__name__}.{kind}")


def hook_tensor(tensor: torch.Tensor, fn: Callable, kind: str = "tensor", name: str = "") -> HookHandle:
    """Register ``fn`` on ``tensor`` (``Tensor.register_hook`` or the post-accumulate-grad hook)."""
    check_kind(kind)
    if kind not in TENSOR_KINDS:
        raise ConfigError(f"hook kind {kind!r} needs a module, got a tensor")
    if not isinstance(tensor, torch.Tensor):
        raise ConfigError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    if not tensor.requires_grad:
        raise ConfigError(f"cannot hook tensor {name or tuple(tensor.shape)}: it does not require grad")
    method, attr = TENSOR_KINDS[kind]
    if kind == "post_accumulate_grad" and tensor.grad_fn is not None:
        raise ConfigError(f"hook kind 'post_accumulate_grad' needs a leaf tensor (a parameter); "
                          f"{name or 'this tensor'} has grad_fn {type(tensor.grad_fn).__name__}")
    was_none = getattr(tensor, attr) is None
    handle = getattr(tensor, method)(fn)
    if was_none:
        _created_dicts.add(getattr(tensor, attr))
    tensor_ref = weakref.ref(tensor)

    def remover() -> None:
        handle.remove()
        live = tensor_ref()
        if live is None:
            return
        hooks = getattr(live, attr)
        if hooks is not None and not hooks and _created_dicts.pop(hooks):
            setattr(live, attr, None)

    return HookHandle(remover, fn, f"{name or 'tensor'}.{kind}")
