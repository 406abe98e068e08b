"""summary(): a torchinfo-like model table, with FLOPs counted by ``FlopCounterMode``.

One forward pass runs under ``torch.no_grad()`` with a forward pre-hook and a
forward hook on every module (removed afterwards) and, unless
``count_flops=False``, inside ``torch.utils.flop_counter.FlopCounterMode``, so
matmuls, attention and other functional ops are counted, not only layers
with weights. Each row is one module call; a shared module appears once per
call and is marked ``(reused)``. Parameter totals count every tensor once, so
tied weights are not counted twice.

``summary(model)`` with no input runs no forward pass and lists the module
tree with parameter counts only (so do TorchScript models, which run no
Python hooks, with the model's own output shape and FLOPs).

Example::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect import summary
    >>> net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    >>> s = summary(net, input_size=(8, 16))
    >>> s.total_params, s.total_flops == 2 * 8 * (16 * 32 + 32 * 4)
    (676, True)
    >>> print(s)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from hookline.core import ConfigError, HandleGroup

from ._flops import flop_counter, no_mha_fastpath
from ._inputs import make_inputs
from ._register import hook_module
from .features import _tensors
from .model_summary import LayerRecord, ModelSummary

MODES = ("eval", "train", "same")


def _shape(output: Any) -> Any:
    shapes = [list(t.shape) for t in _tensors(output)]
    if not shapes:
        return None
    return shapes[0] if len(shapes) == 1 else shapes


def _storages(value: Any) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in _tensors(value)}


def _count(module: nn.Module) -> tuple[int, int, int, int]:
    """Parameters of the module (recursively) and its own, all and trainable; lazy ones count 0."""
    params = [p for p in module.parameters() if not is_lazy(p)]
    own = [p for p in module.parameters(recurse=False) if not is_lazy(p)]
    return (sum(p.numel() for p in params), sum(p.numel() for p in params if p.requires_grad),
            sum(p.numel() for p in own), sum(p.numel() for p in own if p.requires_grad))


def _is_scripted(module: nn.Module) -> bool:
    """TorchScript modules run no Python hooks (registering one raises)."""
    return isinstance(module, torch.jit.ScriptModule)


def _type_name(module: nn.Module) -> str:
    """The class name (a TorchScript module's original one, not ``RecursiveScriptModule``)."""
    original = getattr(module, "original_name", None) if _is_scripted(module) else None
    return original if isinstance(original, str) else type(module).__name__


class _Collector:
    """The hooks of one summary run: builds a LayerRecord per module call.

    Parameter counts are filled in by :meth:`finish`, after the forward pass:
    lazy modules (``nn.LazyLinear``) have their parameters only then.
    """

    def __init__(self, model: nn.Module, counter: Any) -> None:
        self.counter = counter
        self.records: list[LayerRecord] = []
        self.modules: list[nn.Module] = []  # the module of each record
        self.stack: list[tuple[nn.Module, LayerRecord, int]] = []
        self.seen: set[int] = set()
        self.activation_bytes = 0
        self.names: dict[nn.Module, list[str]] = {}
        self.by_name: dict[str, nn.Module] = {}
        for name, module in model.named_modules(remove_duplicate=False):
            self.names.setdefault(module, []).append(name)
            self.by_name.setdefault(name, module)
        self._last_child: dict[int, LayerRecord] = {}

    def flops(self) -> int:
        return sum(self.counter.flop_counts["Global"].values()) if self.counter is not None else 0

    def _name(self, module: nn.Module, parent: LayerRecord | None) -> str:
        names = self.names.get(module) or [type(module).__name__]
        if len(names) > 1 and parent is not None:
            prefix = parent.name + "." if parent.name else ""
            for name in names:
                if name.startswith(prefix):
                    return name
        return names[0]

    def record(self, module: nn.Module, name: str, parent: LayerRecord | None, **extra: Any) -> LayerRecord:
        record = LayerRecord(name, _type_name(module), parent.depth + 1 if parent else 0,
                             has_children=next(module.children(), None) is not None, parent=parent, **extra)
        self.records.append(record)
        self.modules.append(module)
        self._last_child[id(parent)] = record
        return record

    def _through_containers(self, parent: LayerRecord | None, name: str) -> LayerRecord | None:
        """Insert rows for the never-called modules between ``parent`` and ``name`` (ModuleList ...)."""
        if parent is None:
            return None
        if parent.name and not name.startswith(parent.name + "."):
            return parent
        parts = name.split(".")
        start = parent.name.count(".") + 1 if parent.name else 0
        for end in range(start + 1, len(parts)):
            prefix = ".".join(parts[:end])
            module = self.by_name.get(prefix)
            if module is None or id(module) in self.seen:
                continue
            last = self._last_child.get(id(parent))
            if last is None or not last.container or last.name != prefix:
                # a new row when other rows came between, so children stay under their container
                reused = any(r.container and r.name == prefix for r in self.records)
                last = self.record(module, prefix, parent, container=True, reused=reused)
            parent = last
        return parent

    def pre(self, module: nn.Module, _args: Any) -> None:
        parent = self.stack[-1][1] if self.stack else None
        name = self._name(module, parent)
        parent = self._through_containers(parent, name)
        record = self.record(module, name, parent, reused=id(module) in self.seen)
        self.seen.add(id(module))
        self.stack.append((module, record, self.flops()))

    def post(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index][0] is module:
                break
        else:
            return
        _module, record, flops_before = self.stack[index]
        del self.stack[index:]
        record.output_shape = _shape(output)
        record.flops = self.flops() - flops_before
        inputs = _storages((args, kwargs))
        record.output_bytes = sum(t.numel() * t.element_size() for t in _tensors(output)
                                  if t.untyped_storage().data_ptr() not in inputs)
        if not record.has_children:
            self.activation_bytes += record.output_bytes

    def tree(self, model: nn.Module) -> None:
        """One row per module of the module tree, no forward pass (parameters only, TorchScript)."""
        def visit(module: nn.Module, name: str, parent: LayerRecord | None) -> None:
            record = self.record(module, name, parent, reused=id(module) in self.seen)
            self.seen.add(id(module))
            for child_name, child in module.named_children():
                visit(child, f"{name}.{child_name}" if name else child_name, record)

        visit(model, "", None)

    def finish(self) -> None:
        counts: dict[int, tuple[int, int, int, int]] = {}
        for record, module in zip(self.records, self.modules):
            count = counts.get(id(module))
            if count is None:
                count = counts[id(module)] = _count(module)
            record.params, record.trainable_params, record.own_params, record.own_trainable = count
            if record.container:
                record.flops = sum(r.flops for r in self.records if r.parent is record)


def summary(model: nn.Module, input_size: Sequence[int] | Sequence[Sequence[int]] | None = None,
            input_data: Any = None, depth: int = 3, *,
            dtypes: torch.dtype | Sequence[torch.dtype] | None = None,
            device: torch.device | str | None = None, mode: str = "eval", count_flops: bool = True,
            **kwargs: Any) -> ModelSummary:
    """Run one forward pass of ``model`` and return its :class:`ModelSummary`.

    Args:
        model: the model.
        input_size: the input shape, batch dimension included (``(1, 3, 32, 32)``),
            or a list of shapes for several positional inputs (``[]`` in the
            list: a 0-d tensor). Random floats (zeros for integer ``dtypes``)
            are generated on the model's device.
        input_data: the input itself instead: a tensor, a ``PackedSequence``,
            a tuple/list of positional inputs, or a dict of keyword inputs.
        depth: the deepest level of the module tree shown (the model is 0).
        dtypes: dtype of each generated input (default float32).
        device: where inputs go (default: the model's parameters' device).
        mode: ``"eval"`` (default), ``"train"`` or ``"same"``; every module's
            training flag is restored afterwards.
        count_flops: count FLOPs with ``FlopCounterMode`` (slower; ``False`` gives 0).
        **kwargs: further keyword arguments for ``model.forward``.

    With no input at all (``summary(model)``) no forward pass runs: the rows
    are the module tree with parameter counts, without shapes or FLOPs. A
    TorchScript model runs no Python hooks: its rows are its module tree, and
    only the model's own row has the output shape and the FLOPs.

    Returns:
        A :class:`ModelSummary`; ``print()`` it for the table.
    """
    if not isinstance(model, nn.Module):
        raise ConfigError(f"summary expects an nn.Module, got {type(model).__name__}")
    if not isinstance(depth, int) or depth < 0:
        raise ConfigError(f"depth must be an int >= 0, got {depth!r}")
    if mode not in MODES:
        raise ConfigError.unknown("mode", mode, MODES)
    if device is None:
        first: torch.Tensor | None = next(iter(model.parameters()), None)
        if first is None:
            first = next(iter(model.buffers()), None)
        device = first.device if first is not None else torch.device("cpu")
    inputs = make_inputs(input_size, input_data, dtypes, torch.device(device), kwargs)
    collector = _Collector(model, flop_counter() if count_flops and inputs is not None else None)
    if inputs is None:
        collector.tree(model)
        return _result(model, collector, depth, forward=False)
    scripted = _is_scripted(model)
    if not scripted and type(model).forward is nn.Module.forward:
        raise ConfigError(f"{type(model).__name__} has no forward(): call summary(model) without input_size "
                          "or input_data for its layers and parameters")
    args, forward_kwargs = inputs
    training = {m: m.training for m in model.modules()}
    if mode != "same":
        model.train(mode == "train")
    handles = HandleGroup()
    try:
        for module in collector.names:
            if not scripted and not _is_scripted(module):
                handles.add(hook_module(module, collector.pre, "forward_pre"))
                handles.add(hook_module(module, collector.post, "forward", with_kwargs=True))
        counting = collector.counter if collector.counter is not None else contextlib.nullcontext()
        with torch.no_grad(), no_mha_fastpath(), counting:
            output = model(*args, **forward_kwargs)
    except Exception as err:
        ran = [r.name or r.type_name for r in collector.records][-5:]
        raise RuntimeError(f"summary: the forward pass of {type(model).__name__} failed "
                           f"(last layers that started: {ran}): {type(err).__name__}: {err}") from err
    finally:
        handles.remove()
        for module, was_training in training.items():
            module.training = was_training
    if scripted:
        collector.tree(model)
        collector.records[0].output_shape = _shape(output)
        collector.records[0].flops = collector.flops()
    return _result(model, collector, depth, input_bytes=sum(
        t.numel() * t.element_size() for t in _tensors((args, forward_kwargs))))


def _result(model: nn.Module, collector: _Collector, depth: int, *, forward: bool = True,
            input_bytes: int = 0) -> ModelSummary:
    collector.finish()
    named: dict[int, tuple[str, nn.Parameter]] = {}
    for name, param in model.named_parameters():
        named.setdefault(id(param), (name, param))
    unique = [p for _, p in named.values() if not is_lazy(p)]
    return ModelSummary(
        model_name=_type_name(model),
        layers=[r for r in collector.records if r.depth <= depth],
        total_params=sum(p.numel() for p in unique),
        trainable_params=sum(p.numel() for p in unique if p.requires_grad),
        total_flops=collector.flops(),
        param_bytes=sum(p.numel() * p.element_size() for p in unique),
        input_bytes=input_bytes,
        activation_bytes=collector.activation_bytes,
        depth=depth,
        all_layers=collector.records,
        forward=forward,
        uninitialized=[name for name, p in named.values() if is_lazy(p)],
    )
