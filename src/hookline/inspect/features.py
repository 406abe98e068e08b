"""FeatureExtractor: keep the outputs of named layers during a forward pass.

Example::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect import FeatureExtractor
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> with FeatureExtractor(net, ["0", "1"]) as fx:
    ...     out = net(torch.randn(3, 4))
    >>> fx.features["1"].shape, fx.features["1"].requires_grad
    (torch.Size([3, 8]), False)
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence

from hookline.core import ConfigError

from ._resolve import resolve_name
from ._tool import HookTool


def map_tensors(value: Any, fn: Any) -> Any:
    """Apply ``fn`` to every tensor in nested tuples, lists, dicts and dataclasses; other values
    pass through. Tuples keep their type (named tuples, ``torch.return_types``), mappings and
    dataclasses theirs where it can be rebuilt.

    A ``PackedSequence`` keeps its ``batch_sizes`` as they are (torch wants them on the CPU).
    """
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, PackedSequence):
        data, batch_sizes, order, unorder = value
        return PackedSequence(fn(data), batch_sizes, None if order is None else fn(order),
                              None if unorder is None else fn(unorder))
    if isinstance(value, tuple):
        items = [map_tensors(v, fn) for v in value]
        if hasattr(value, "_fields"):
            return type(value)(*items)
        if type(value) is not tuple:  # torch.return_types.max & co. take one sequence
            with contextlib.suppress(Exception):
                return type(value)(items)
        return tuple(items)
    if isinstance(value, list):
        return [map_tensors(v, fn) for v in value]
    if isinstance(value, Mapping):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: map_tensors(getattr(value, f.name), fn)
                                             for f in dataclasses.fields(value) if f.init})
    return value


def tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors in nested tuples, lists and dicts (of a PackedSequence, its data)."""
    found: list[torch.Tensor] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, PackedSequence):
            found.append(item.data)
        elif isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
        elif isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
    return found


def _check_names(keys: Mapping[Any, Any]) -> None:
    """Layer names and keys must be non-empty strings (the model's own output is what it returns)."""
    bad = [name for name in keys if not isinstance(name, str) or not name]
    if bad:
        raise ConfigError(f"FeatureExtractor layer names must be non-empty strings, names from "
                          f"model.named_modules() such as 'layer1.0.conv1' (the model's own output is "
                          f"what it returns), got {bad[0]!r}")
    bad = [key for key in keys.values() if not isinstance(key, str) or not key]
    if bad:
        raise ConfigError(f"FeatureExtractor keys must be non-empty strings (the dict's values: the names "
                          f"features are stored under), got {bad[0]!r}")


def _check_callable(name: str, module: nn.Module) -> None:
    """A module whose class has no forward of its own (ModuleList, ModuleDict) is never called."""
    if not isinstance(module, torch.jit.ScriptModule) and type(module).forward is nn.Module.forward:
        children = [n for n, _ in module.named_children()][:5]
        raise ConfigError(f"FeatureExtractor layer {name!r} is a {type(module).__name__}, which has no "
                          f"forward() and is never called, so it has no output; name one of its layers "
                          f"instead ({', '.join(f'{name}.{c}' for c in children) or 'it has none'})")


class _Features(dict):  # type: ignore[type-arg]
    """``FeatureExtractor.features``: a dict whose missing key says that the layer did not run."""

    def __missing__(self, key: Any) -> Any:
        raise KeyError(f"{key!r}: no output recorded in the last forward (the layer did not run: its "
                       "module was not called, e.g. MultiheadAttention's out_proj, whose weights it uses "
                       "directly; or no forward ran yet)")


class FeatureExtractor(HookTool):
    """Stores the outputs of ``layers`` each time ``model`` runs forward.

    Args:
        model: the model.
        layers: module names from ``model.named_modules()``, or a dict mapping
            module names to the keys to store their outputs under.
        detach: store ``output.detach()`` (the default), so no autograd graph
            is kept alive. ``False`` keeps the graph, e.g. to backpropagate
            from a feature.
        to_cpu: move stored features to the CPU.
        clone: store copies. Needed when a later in-place op (such as a
            following ``ReLU(inplace=True)``) overwrites a layer's output;
            without it, such a feature is reported by a ``RuntimeWarning``.

    ``features`` holds the outputs of the most recent forward of ``model``
    (a call of ``model`` clears it first): one value per layer, or a **list
    with one value per call** when a layer ran several times in that forward
    (a module reused in a loop, say). Tuple, list and dict outputs keep their
    structure.

    An unknown layer name is a :class:`~hookline.core.ConfigError` naming the
    closest module names, and so is a module that has no ``forward()`` of its
    own (``nn.ModuleList``, ``nn.ModuleDict``: never called, no output). A layer
    that did not run in the last forward has no entry in ``features``; the
    ``KeyError`` says so.
    """

    def __init__(self, model: nn.Module, layers: Iterable[str] | Mapping[str, str], *, detach: bool = True,
                 to_cpu: bool = False, clone: bool = False) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise ConfigError(f"FeatureExtractor expects an nn.Module, got {type(model).__name__}")
        if isinstance(layers, str):
            layers = [layers]
        if not isinstance(layers, (Mapping, Iterable)):
            raise ConfigError("FeatureExtractor layers must be a layer name, a list of them or "
                              f"a dict of layer name -> key, got {layers!r}")
        keys = dict(layers) if isinstance(layers, Mapping) else {name: name for name in layers}
        if not keys:
            raise ConfigError("FeatureExtractor needs at least one layer name")
        _check_names(keys)
        shared = sorted({key for key in keys.values() if list(keys.values()).count(key) > 1})
        if shared:
            raise ConfigError(f"FeatureExtractor maps several layers to the key {shared[0]!r}: "
                              "their outputs would merge into one list, like one layer called "
                              "twice; give each layer its own key")
        modules = {name: resolve_name(model, name) for name in keys}  # all names checked before hooking
        for name, module in modules.items():
            _check_callable(name, module)
        self.model = model
        self.layers = list(keys.values())
        self.detach, self.to_cpu, self.clone = detach, to_cpu, clone
        self.features: dict[str, Any] = _Features()
        self.calls: dict[str, int] = {}
        self._versions: list[tuple[str, torch.Tensor, int]] = []
        self._hook_module(model, self._start, "forward_pre", "model", prepend=True)
        for name, module in modules.items():
            self._hook_module(module, self._recorder(keys[name]), "forward", name)
        self._hook_module(model, self._finish, "forward", "model")

    def _start(self, _module: nn.Module, _args: Any) -> None:
        self.features = _Features()
        self.calls = {}
        self._versions = []

    def _prepare(self, tensor: torch.Tensor) -> torch.Tensor:
        out = tensor.detach() if self.detach else tensor
        if self.to_cpu:
            out = out.to("cpu")
        if self.clone and out.device == tensor.device:  # a device move is already a copy
            out = out.clone()
        return out

    # Tensor._version, torch's in-place modification counter, is how an overwritten feature shows.
    def _recorder(self, key: str) -> Callable[[nn.Module, Any, Any], None]:
        def record(_module: nn.Module, _args: Any, output: Any) -> None:
            value = map_tensors(output, self._prepare)
            if not self.clone:
                self._versions.extend((key, t, t._version) for t in tensors_in(value))  # noqa: SLF001
            calls = self.calls.get(key, 0) + 1
            self.calls[key] = calls
            if calls == 1:
                self.features[key] = value
            elif calls == 2:
                self.features[key] = [self.features[key], value]
            else:
                self.features[key].append(value)
        return record

    def _finish(self, _module: nn.Module, _args: Any, _output: Any) -> None:
        changed = sorted({key for key, t, version in self._versions if t._version != version})  # noqa: SLF001
        self._versions = []
        if changed:
            warnings.warn(f"FeatureExtractor: feature(s) {', '.join(changed)} were modified in place after "
                          "they were recorded (e.g. by a following ReLU(inplace=True)), so they no longer "
                          "hold the layer's output; pass clone=True to keep copies",
                          RuntimeWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Run ``model(*args, **kwargs)``; return ``(output, features)`` of that forward."""
        if not self.attached:
            raise RuntimeError("this FeatureExtractor was removed; build a new one to extract again")
        output = self.model(*args, **kwargs)
        return output, dict(self.features)
