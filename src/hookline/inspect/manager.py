"""HookManager: register torch module and tensor hooks by module, name, pattern or type.

Example::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect import HookManager
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> shapes = {}
    >>> with HookManager(net) as hooks:
    ...     _ = hooks.register(nn.Linear, lambda m, args, out: shapes.update({hooks.name_of(m): out.shape}))
    ...     _ = net(torch.zeros(3, 4))
    >>> shapes
    {'0': torch.Size([3, 8]), '2': torch.Size([3, 2])}
    >>> len(net[0]._forward_hooks)   # removed on exit
    0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError, HookHandle

from ._register import KINDS, MODULE_KINDS, check_kind, check_options, hook_module, hook_tensor
from ._resolve import module_names, resolve_modules
from ._tool import HookTool


class HookManager(HookTool):
    """Registers hooks through torch's own APIs and keeps their handles.

    Args:
        model: the model that names, glob patterns and module types are looked up
            in. Not needed when every target is a module or a tensor.

    ``remove()`` (or leaving a ``with`` block) removes every hook registered
    through the manager; each module's and tensor's hook dicts are then exactly
    as they were before.
    """

    kinds = KINDS

    def __init__(self, model: nn.Module | None = None) -> None:
        super().__init__()
        if model is not None and not isinstance(model, nn.Module):
            raise ConfigError(f"HookManager expects an nn.Module (or None), got {type(model).__name__}")
        self.model = model
        self._names = module_names(model) if model is not None else {}

    def register(self, target: Any, fn: Callable, kind: str = "forward", **options: Any) -> HookHandle:
        """Register ``fn`` on every module or tensor ``target`` designates; one handle for all.

        Args:
            target: a module, a tensor, a name or glob pattern on
                ``model.named_modules()`` (``"layer*.conv1"``), an ``nn.Module``
                subclass, or a list of those.
            fn: the hook, with torch's signature for ``kind``: ``fn(module, args,
                output)`` for ``"forward"``, ``fn(module, args)`` for
                ``"forward_pre"``, ``fn(module, grad_input, grad_output)`` for
                ``"backward"``, ``fn(module, grad_output)`` for ``"backward_pre"``,
                ``fn(grad)`` for ``"tensor"`` and ``fn(param)`` for
                ``"post_accumulate_grad"``. A returned value replaces what
                torch documents it replaces.
            kind: ``"forward"``, ``"forward_pre"``, ``"backward"``,
                ``"backward_pre"``, ``"tensor"`` or ``"post_accumulate_grad"``.
                With a tensor kind, a module target means the parameters
                (requiring grad) of the matched modules.
            **options: torch's options: ``prepend`` (all module kinds),
                ``with_kwargs`` (forward, forward_pre), ``always_call`` (forward).

        Returns:
            A :class:`~hookline.core.HookHandle` whose ``remove()`` removes
            the hook from every matched module or tensor.
        """
        check_kind(kind)
        if not callable(fn):
            raise ConfigError(f"a hook must be callable, got {fn!r}")
        check_options(kind, options)
        if kind in MODULE_KINDS:
            if isinstance(target, torch.Tensor):
                raise ConfigError(f"hook kind {kind!r} needs a module target, got a tensor; "
                                  "use kind='tensor' or 'post_accumulate_grad' for tensors")
            modules = resolve_modules(self.model, target)
            parts = [hook_module(m, fn, kind, name, **options) for name, m in modules]
        else:
            parts = [hook_tensor(t, fn, kind, name) for name, t in self._tensors(target)]
        points = ",".join(h.point.rsplit(".", 1)[0] for h in parts[:3]) + (",..." if len(parts) > 3 else "")

        def remover() -> None:
            for part in reversed(parts):
                part.remove()

        return self._handles.add(HookHandle(remover, fn, f"{points}.{kind}"))

    def _tensors(self, target: Any) -> list[tuple[str, torch.Tensor]]:
        if isinstance(target, torch.Tensor):
            return [("tensor", target)]
        if isinstance(target, (list, tuple)) and target and all(isinstance(t, torch.Tensor) for t in target):
            return [(f"tensor{i}", t) for i, t in enumerate(target)]
        found: dict[int, tuple[str, torch.Tensor]] = {}
        for mod_name, module in resolve_modules(self.model, target):
            for p_name, param in module.named_parameters():
                if param.requires_grad:
                    found.setdefault(id(param), (f"{mod_name}.{p_name}" if mod_name else p_name, param))
        if not found:
            raise ConfigError(f"{target!r} matches no parameter that requires grad")
        return list(found.values())

    def name_of(self, module: nn.Module) -> str:
        """The name of ``module`` in the manager's model (its class name if not found)."""
        return self._names.get(module) or type(module).__name__

    def __len__(self) -> int:
        """The number of registrations still active."""
        return sum(not h.removed for h in self._handles)
