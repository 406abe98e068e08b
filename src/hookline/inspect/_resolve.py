"""Find modules in a model by name, glob pattern or type.

Names are those of ``model.named_modules()``; ``""`` is the model itself.
A glob (``*``, ``?``, ``[...]``) is matched with :func:`fnmatch.fnmatchcase`
against every name but the root's; ``*`` also crosses dots, so
``"layer*.conv1"`` matches ``"layer1.0.conv1"``.

Example::

    >>> from torch import nn
    >>> from hookline.inspect._resolve import resolve_modules
    >>> net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    >>> [name for name, _ in resolve_modules(net, nn.Linear)]
    ['0', '2']
    >>> [name for name, _ in resolve_modules(net, "[02]")]
    ['0', '2']
"""

from __future__ import annotations

import fnmatch
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError
from hookline.core.errors import closest_names

_GLOB_CHARS = frozenset("*?[")


def module_names(model: nn.Module) -> dict[nn.Module, str]:
    """Each module of ``model`` mapped to its first name in ``named_modules()``."""
    names: dict[nn.Module, str] = {}
    for name, module in model.named_modules():
        names.setdefault(module, name)
    return names


def unknown_name(model: nn.Module, name: str, what: str = "module name or pattern") -> ConfigError:
    """A :class:`ConfigError` for ``name``, suggesting the closest module names of ``model``."""
    names = [n for n, _ in model.named_modules() if n]
    close = closest_names(name, names)
    hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
    shown = ", ".join(names[:40]) + (f", ... ({len(names)} in all)" if len(names) > 40 else "")
    return ConfigError(f"unknown {what} {name!r} in {type(model).__name__}; {hint}"
                       f"(module names: {shown or 'none'})")


def resolve_name(model: nn.Module, name: str) -> nn.Module:
    """The submodule called exactly ``name``, or a :class:`ConfigError` naming the closest ones."""
    if not isinstance(name, str):
        raise ConfigError(f"a layer name must be a string, got {name!r}")
    if isinstance(model, torch.jit.ScriptModule):
        raise ConfigError(f"cannot find layer {name!r}: the model is a ScriptModule "
                          "(torch.jit.script), which torch cannot hook; use the eager model")
    try:
        return model.get_submodule(name)
    except AttributeError:
        raise unknown_name(model, name, "layer name") from None


def resolve_modules(model: nn.Module | None, target: Any) -> list[tuple[str, nn.Module]]:
    """``(name, module)`` pairs that ``target`` designates, in ``named_modules()`` order.

    ``target`` is a module, a name, a glob pattern, an ``nn.Module`` subclass,
    or a list/tuple of those. Names, patterns and types need ``model``.
    """
    if isinstance(target, (list, tuple)):
        found: dict[nn.Module, str] = {}
        for item in target:
            for name, module in resolve_modules(model, item):
                found.setdefault(module, name)
        return [(name, module) for module, name in found.items()]
    if isinstance(target, nn.Module):
        name = module_names(model).get(target, "") if model is not None else ""
        return [(name or type(target).__name__, target)]
    if model is None:
        raise ConfigError(f"target {target!r} needs a model to look in: use HookManager(model), "
                          "or pass the module or tensor itself")
    if isinstance(target, str):
        named = list(model.named_modules())
        exact = [(n, m) for n, m in named if n == target]
        if exact:
            return exact
        if _GLOB_CHARS & set(target):
            matches = [(n, m) for n, m in named if n and fnmatch.fnmatchcase(n, target)]
            if matches:
                return matches
        raise unknown_name(model, target)
    if isinstance(target, type) and issubclass(target, nn.Module):
        matches = [(n, m) for n, m in model.named_modules() if isinstance(m, target)]
        if not matches:
            present = sorted({type(m).__name__ for m in model.modules()})
            raise ConfigError.unknown(f"module type in {type(model).__name__}", target.__name__, present)
        return matches
    raise ConfigError(f"cannot hook {target!r}: expected a module, a tensor, a module name or glob "
                      "pattern (str), an nn.Module subclass, or a list of those")
