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
from hookline.core.event import check_options as check_filters

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

    def register(self, target: Any, fn: Callable, kind: str = "forward", *, every: int = 1,
                 once: bool = False, when: Callable[..., Any] | None = None, **options: Any) -> HookHandle:
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
                (requiring grad) of the matched modules. The backward kinds
                work with in-place ops (see :mod:`hookline.inspect._backward`).
            every: run on every ``every``-th call of each matched module or
                tensor (counted per module or tensor).
            once: run once on each matched module or tensor, then come off it;
                the handle reports ``removed`` when it is off all of them.
            when: run only when ``when(*hook_args)`` (the hook's own arguments) is true.
            **options: torch's options: ``prepend`` (all module kinds),
                ``with_kwargs`` (forward, forward_pre), ``always_call`` (forward).

        Returns:
            A :class:`~hookline.core.HookHandle` whose ``remove()`` removes
            the hook from every matched module or tensor.

        An exception raised by ``fn`` reaches the caller as a
        :class:`~hookline.core.HookError` naming ``fn`` and the hook point
        ``<module name>.<kind>``, with the original as ``__cause__``.
        """
        check_kind(kind)
        if not callable(fn):
            raise ConfigError(f"a hook must be callable, got {fn!r}")
        check_options(kind, options)
        check_filters(once, every, when)
        handles: list[HookHandle] = []  # the registration's handle, once it exists
        parts: list[HookHandle] = []

        def part_removed() -> None:  # once=True: the handle goes with the last part
            if once and handles and all(p.removed for p in parts):
                handles[0].remove()

        filters: dict[str, Any] = {"every": every, "once": once, "when": when, "on_removed": part_removed}
        if kind in MODULE_KINDS:
            if isinstance(target, torch.Tensor):
                raise ConfigError(f"hook kind {kind!r} needs a module target, got a tensor; "
                                  "use kind='tensor' or 'post_accumulate_grad' for tensors")
            found: list[tuple[str, Any]] = resolve_modules(self.model, target)
        else:
            found = self._tensors(target)
        try:
            for name, obj in found:
                if kind in MODULE_KINDS:
                    parts.append(hook_module(obj, fn, kind, name, **filters, **options))
                else:
                    parts.append(hook_tensor(obj, fn, kind, name, **filters))
        except BaseException:  # all or nothing: a failed registration leaves no hook behind
            for part in reversed(parts):
                part.remove()
            raise
        points = ",".join(h.point.rsplit(".", 1)[0] for h in parts[:3]) + (",..." if len(parts) > 3 else "")

        def remover() -> None:
            for part in reversed(parts):
                part.remove()

        handles.append(self._handles.add(HookHandle(remover, fn, f"{points}.{kind}")))
        return handles[0]

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
