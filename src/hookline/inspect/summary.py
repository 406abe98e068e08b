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
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from hookline.core import ConfigError, HandleGroup

from ._flops import flop_counter, no_mha_fastpath
from ._inputs import make_inputs
from ._options import check_columns, check_rows, check_verbose, forward_kwargs
from ._register import hook_module
from .features import tensors_in
from .model_summary import LayerRecord, ModelSummary

MODES = ("eval", "train", "same")


def _shape(output: Any) -> Any:
    shapes = [list(t.shape) for t in tensors_in(output)]
    if not shapes:
        return None
    return shapes[0] if len(shapes) == 1 else shapes


def _storages(value: Any) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tensors_in(value)}


def _sizes(module: nn.Module, recurse: bool = True) -> dict[int, tuple[int, int]]:
    """``id(parameter) -> (numel, trainable numel)`` of the module's parameters, each tensor once;
    lazy ones (uninitialized) are left out."""
    return {id(p): (p.numel(), p.numel() if p.requires_grad else 0)
            for p in module.parameters(recurse=recurse) if not is_lazy(p)}


def _sum(sizes: dict[int, tuple[int, int]], ids: Iterable[int]) -> tuple[int, int]:
    """All and trainable parameters of ``ids`` (keys of ``sizes``)."""
    chosen = [sizes[i] for i in ids]
    return sum(n for n, _ in chosen), sum(t for _, t in chosen)


def _not_under(module: nn.Module, children: Iterable[nn.Module]) -> frozenset[int]:
    """Ids of the parameters of ``module`` held by none of ``children``."""
    covered = {id(p) for child in children for p in child.parameters()}
    return frozenset(i for i in _sizes(module) if i not in covered)


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
        return self.counter.total if self.counter is not None else 0

    def _name(self, module: nn.Module, parent: LayerRecord | None) -> str:
        names = self.names.get(module) or [type(module).__name__]
        if len(names) > 1 and parent is not None:
            prefix = parent.name + "." if parent.name else ""
            for name in names:
                if name.startswith(prefix):
                    return name
        return names[0]

    def record(self, module: nn.Module, name: str, parent: LayerRecord | None, **extra: Any) -> LayerRecord:
        kernel = getattr(module, "kernel_size", None)
        record = LayerRecord(name, _type_name(module), parent.depth + 1 if parent else 0,
                             has_children=next(module.children(), None) is not None, parent=parent,
                             kernel_size=list(kernel) if isinstance(kernel, (tuple, list)) else kernel,
                             **extra)
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
        record.input_shape = _shape(args) if tensors_in(args) else _shape(kwargs)
        record.flops = self.flops() - flops_before
        inputs = _storages((args, kwargs))
        record.output_bytes = sum(t.numel() * t.element_size() for t in tensors_in(output)
                                  if t.untyped_storage().data_ptr() not in inputs)
        if self.records[-1] is record:  # no module ran inside this call: a leaf of the call tree
            self.activation_bytes += record.output_bytes

    def tree(self, model: nn.Module) -> None:
        """One row per module of the module tree, no forward pass (parameters only, TorchScript)."""
        def visit(module: nn.Module, name: str, parent: LayerRecord | None) -> None:
            record = self.record(module, name, parent, reused=id(module) in self.seen)
            self.seen.add(id(module))
            for child_name, child in module.named_children():
                visit(child, f"{name}.{child_name}" if name else child_name, record)

        visit(model, "", None)

    def _children_run(self) -> dict[int, dict[int, nn.Module]]:
        """``id(module) -> {id: module}`` of the modules with a child row under any row of that module.

        A container whose children run in several stretches (two ModuleLists zipped in one loop)
        has several rows; what any of them shows under it is left out of every one's own count.
        """
        module_of = {id(r): m for r, m in zip(self.records, self.modules)}
        children: dict[int, dict[int, nn.Module]] = {}
        for record, module in zip(self.records, self.modules):
            if record.parent is not None:
                children.setdefault(id(module_of[id(record.parent)]), {})[id(module)] = module
        return children

    def finish(self) -> None:
        """Fill in the parameter counts of every row (and a container row's FLOPs)."""
        children_run = self._children_run()
        done: dict[int, tuple[dict[int, tuple[int, int]], frozenset[int]]] = {}
        for record, module in zip(self.records, self.modules):
            if id(module) not in done:
                children = children_run.get(id(module))
                # own: what no child row accounts for (its own, and never-called children's)
                own = _not_under(module, children.values()) if children else frozenset(_sizes(module, False))
                done[id(module)] = (_sizes(module), own)
            record.param_sizes, record.own_ids = done[id(module)]
            record.params, record.trainable_params = _sum(record.param_sizes, record.param_sizes)
            record.own_params, record.own_trainable = _sum(record.param_sizes, record.own_ids)
            record.param_shapes = [(n, list(p.shape), p.numel()) for n, p in module.named_parameters()
                                   if not is_lazy(p)]
            if record.container:
                record.flops = sum(r.flops for r in self.records if r.parent is record)


def summary(model: nn.Module, input_size: Sequence[int] | Sequence[Sequence[int]] | None = None,
            input_data: Any = None, depth: int = 3, *, batch_dim: int | None = None,
            col_names: Iterable[str] | None = None,
            dtypes: torch.dtype | str | Sequence[torch.dtype | str] | None = None,
            device: torch.device | str | None = None, mode: str | None = "eval",
            row_settings: Iterable[str] | None = None, verbose: int | None = None, count_flops: bool = True,
            **kwargs: Any) -> ModelSummary:
    """Run one forward pass of ``model`` and return its :class:`ModelSummary`.

    The options are torchinfo's where their meaning carries over (docs/inspect.md has the table).

    Args:
        model: the model.
        input_size: the input shape, batch dimension included (``(1, 3, 32, 32)``),
            or a list of shapes for several positional inputs (``[]`` in the
            list: a 0-d tensor). Random floats (zeros for integer ``dtypes``)
            are generated on the model's device.
        input_data: the input itself instead: a tensor, a ``PackedSequence``,
            a tuple/list of positional inputs, or a dict of keyword inputs.
        depth: the deepest level of the module tree shown (the model is 0).
        batch_dim: ``input_size`` leaves the batch dimension out: a dimension
            of 1 is inserted at this index (torchinfo's).
        col_names: the columns, in order: ``input_size``, ``output_size``,
            ``num_params``, ``params_percent``, ``kernel_size``, ``mult_adds``,
            ``trainable`` (torchinfo's), ``trainable_params``, ``flops``
            (hookline's). Default: output_size, num_params, trainable_params, flops.
        dtypes: dtype of each generated input (default float32): torch dtypes
            or names (``"long"``).
        device: where inputs go (default: the model's parameters' device). The
            model is not moved (torchinfo moves it): parameters elsewhere are a ConfigError.
        mode: ``"eval"`` (default; torchinfo's ``None`` too), ``"train"`` or ``"same"``; every module's
            training flag is restored afterwards.
        row_settings: torchinfo's ``depth`` (``: 1-2`` after the label),
            ``var_names`` (``name (Type)``), ``ascii_only``,
            ``hide_recursive_layers`` (no rows for a shared module's later
            calls). Default: labels ``name (Type)``.
        verbose: None (default): print nothing; 0: print nothing; 1: print
            the table; 2: print it with a row per parameter. torchinfo prints
            by default; hookline returns the summary for ``print()``.
        count_flops: count FLOPs (slower; ``False`` gives 0).
        **kwargs: keyword arguments for ``model.forward``: only names its
            signature has (or any, if it takes ``**kwargs``); other names are a
            ConfigError (torchinfo passes everything on). ``col_width`` and
            ``cache_forward_pass`` are refused.

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
    if mode is None:  # torchinfo's default: eval
        mode = "eval"
    if mode not in MODES:
        raise ConfigError.unknown("mode", mode, MODES)
    given = input_size is not None or input_data is not None or bool(kwargs)
    columns, rows = check_columns(col_names, given), check_rows(row_settings)
    printing = check_verbose(verbose)
    kwargs = forward_kwargs(model, kwargs)
    first: torch.Tensor | None = next(iter(model.parameters()), None)
    if first is None:
        first = next(iter(model.buffers()), None)
    if device is None:
        device = first.device if first is not None else torch.device("cpu")
    device = _device(device, first)
    result = _run(model, make_inputs(input_size, input_data, dtypes, device, kwargs, batch_dim), depth, mode,
                  count_flops)
    result.columns, result.row_settings, result.verbose = columns, rows, printing or 1
    if printing:
        print(result)
    return result


def _device(device: torch.device | str, first: torch.Tensor | None) -> torch.device:
    try:
        wanted = torch.device(device)
    except (RuntimeError, TypeError):
        raise ConfigError(f"device must be a torch device or its name ('cpu', 'cuda:0'), "
                          f"got {device!r}") from None
    if wanted.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {str(wanted)!r}: this machine has no CUDA device "
                          "(torch.cuda.is_available() is False); use device='cpu' or leave it out")
    if first is not None and (first.device.type != wanted.type or (
            wanted.index is not None and first.device.index not in (None, wanted.index))):
        raise ConfigError(f"device {str(wanted)!r}, but the model's parameters are on {str(first.device)!r}: "
                          "summary does not move the model (torchinfo does); call model.to(device) first")
    return wanted


def _run(model: nn.Module, inputs: tuple[tuple[Any, ...], dict[str, Any]] | None, depth: int, mode: str,
         count_flops: bool) -> ModelSummary:
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
                handles.add(hook_module(module, collector.post, "forward", with_kwargs=True,
                                        always_call=True))  # a call that raised ends too
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
        t.numel() * t.element_size() for t in tensors_in((args, forward_kwargs))))


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
