"""summary(): a torchinfo-like model table, with FLOPs counted by ``FlopCounterMode``.

One forward pass runs under ``torch.no_grad()`` with a forward pre-hook and a
forward hook on every module (removed afterwards) and, unless
``count_flops=False``, inside ``torch.utils.flop_counter.FlopCounterMode``, so
matmuls, attention and other functional ops are counted, not only layers
with weights. Each row is one module call; a shared module appears once per
call and is marked ``(reused)``. Parameter totals count every tensor once, so
tied weights are not counted twice.

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
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError, HandleGroup

from ._register import hook_module
from .features import _tensors, map_tensors
from .model_summary import LayerRecord, ModelSummary

MODES = ("eval", "train", "same")


# torch.utils.flop_counter imports triton where it is installed: it loads when summary() runs,
# not with hookline.inspect.
def _cpu_sdpa_flops(query_shape: Any, key_shape: Any, value_shape: Any, *args: Any, **kwargs: Any) -> int:
    from torch.utils.flop_counter import sdpa_flop_count  # noqa: PLC0415
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def _flop_counter() -> Any:
    """A silent FlopCounterMode that also counts the CPU attention kernels torch leaves out."""
    from torch.utils.flop_counter import FlopCounterMode  # noqa: PLC0415
    mapping = {}
    for op in ("_scaled_dot_product_flash_attention_for_cpu",
               "_scaled_dot_product_fused_attention_overrideable",
               "_scaled_dot_product_attention_math_for_mps"):
        packet = getattr(torch.ops.aten, op, None)
        if packet is not None:
            mapping[packet] = _cpu_sdpa_flops
    return FlopCounterMode(display=False, custom_mapping=mapping)


@contextlib.contextmanager
def _no_mha_fastpath() -> Iterator[None]:
    """Turn off MultiheadAttention's fused inference path, whose kernel no FLOP formula covers."""
    mha = getattr(torch.backends, "mha", None)
    if mha is None or not hasattr(mha, "set_fastpath_enabled"):
        yield
        return
    before = mha.get_fastpath_enabled()
    mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        mha.set_fastpath_enabled(before)


def _is_shape(value: Any) -> bool:
    return isinstance(value, (tuple, list, torch.Size)) and all(
        isinstance(d, int) and not isinstance(d, bool) for d in value)


def _make_inputs(input_size: Any, input_data: Any, dtypes: Any, device: torch.device,
                 kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    if input_data is not None:
        data = map_tensors(input_data, lambda t: t.to(device))
        if isinstance(data, torch.Tensor):
            return (data,), dict(kwargs)
        if isinstance(data, Mapping):
            return (), {**data, **kwargs}
        if isinstance(data, (list, tuple)):
            return tuple(data), dict(kwargs)
        return (data,), dict(kwargs)
    if input_size is None:
        if kwargs:
            return (), dict(kwargs)
        raise ConfigError("summary needs input_size (e.g. (1, 3, 32, 32), batch dimension included) or "
                          "input_data (a tensor, a tuple of positional inputs or a dict of keyword inputs)")
    sizes = [input_size] if _is_shape(input_size) else list(input_size)
    for size in sizes:
        if not _is_shape(size) or any(d < 0 for d in size):
            raise ConfigError(f"input_size must be a shape such as (1, 3, 32, 32) or a list of shapes, "
                              f"got {input_size!r}")
    if dtypes is None or isinstance(dtypes, torch.dtype):
        dtypes = [dtypes or torch.float32] * len(sizes)
    if len(dtypes) != len(sizes):
        raise ConfigError(f"dtypes has {len(dtypes)} entries for {len(sizes)} input sizes")
    args = tuple(torch.rand(*size, device=device).to(dtype) if dtype.is_floating_point
                 else torch.zeros(*size, dtype=dtype, device=device) for size, dtype in zip(sizes, dtypes))
    return args, dict(kwargs)


def _shape(output: Any) -> Any:
    shapes = [list(t.shape) for t in _tensors(output)]
    if not shapes:
        return None
    return shapes[0] if len(shapes) == 1 else shapes


def _storages(value: Any) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in _tensors(value)}


class _Collector:
    """The hooks of one summary run: builds a LayerRecord per module call."""

    def __init__(self, model: nn.Module, counter: Any) -> None:
        self.counter = counter
        self.records: list[LayerRecord] = []
        self.stack: list[tuple[nn.Module, LayerRecord, int]] = []
        self.seen: set[int] = set()
        self.activation_bytes = 0
        self.names: dict[nn.Module, list[str]] = {}
        self.by_name: dict[str, nn.Module] = {}
        for name, module in model.named_modules(remove_duplicate=False):
            self.names.setdefault(module, []).append(name)
            self.by_name.setdefault(name, module)
        self.counts = {module: self._count(module) for module in self.names}
        self._last_child: dict[int, LayerRecord] = {}

    @staticmethod
    def _count(module: nn.Module) -> tuple[int, int, int, int, bool]:
        params = list(module.parameters())
        own = list(module.parameters(recurse=False))
        return (sum(p.numel() for p in params), sum(p.numel() for p in params if p.requires_grad),
                sum(p.numel() for p in own), sum(p.numel() for p in own if p.requires_grad),
                next(module.children(), None) is not None)

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

    def _record(self, module: nn.Module, name: str, parent: LayerRecord | None, **extra: Any) -> LayerRecord:
        params, trainable, own, own_trainable, has_children = self.counts.get(module, (0, 0, 0, 0, False))
        record = LayerRecord(name, type(module).__name__, parent.depth + 1 if parent else 0, params=params,
                             trainable_params=trainable, own_params=own, own_trainable=own_trainable,
                             has_children=has_children, parent=parent, **extra)
        self.records.append(record)
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
                last = self._record(module, prefix, parent, container=True, reused=reused)
            parent = last
        return parent

    def pre(self, module: nn.Module, _args: Any) -> None:
        parent = self.stack[-1][1] if self.stack else None
        name = self._name(module, parent)
        parent = self._through_containers(parent, name)
        record = self._record(module, name, parent, reused=id(module) in self.seen)
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

    def finish(self) -> None:
        for record in self.records:
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
            or a list of shapes for several positional inputs. Random floats
            (zeros for integer ``dtypes``) are generated on the model's device.
        input_data: the input itself instead: a tensor, a tuple/list of
            positional inputs, or a dict of keyword inputs.
        depth: the deepest level of the module tree shown (the model is 0).
        dtypes: dtype of each generated input (default float32).
        device: where inputs go (default: the model's parameters' device).
        mode: ``"eval"`` (default), ``"train"`` or ``"same"``; every module's
            training flag is restored afterwards.
        count_flops: count FLOPs with ``FlopCounterMode`` (slower; ``False`` gives 0).
        **kwargs: further keyword arguments for ``model.forward``.

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
    args, forward_kwargs = _make_inputs(input_size, input_data, dtypes, torch.device(device), kwargs)
    collector = _Collector(model, _flop_counter() if count_flops else None)
    training = {m: m.training for m in model.modules()}
    if mode != "same":
        model.train(mode == "train")
    handles = HandleGroup()
    try:
        for module in collector.names:
            handles.add(hook_module(module, collector.pre, "forward_pre"))
            handles.add(hook_module(module, collector.post, "forward", with_kwargs=True))
        counting = collector.counter if collector.counter is not None else contextlib.nullcontext()
        with torch.no_grad(), _no_mha_fastpath(), counting:
            model(*args, **forward_kwargs)
    except Exception as err:
        ran = [r.name or r.type_name for r in collector.records][-5:]
        raise RuntimeError(f"summary: the forward pass of {type(model).__name__} failed "
                           f"(last layers that started: {ran}): {type(err).__name__}: {err}") from err
    finally:
        handles.remove()
        for module, was_training in training.items():
            module.training = was_training
    collector.finish()
    unique = {id(p): p for p in model.parameters()}.values()
    return ModelSummary(
        model_name=type(model).__name__,
        layers=[r for r in collector.records if r.depth <= depth],
        total_params=sum(p.numel() for p in unique),
        trainable_params=sum(p.numel() for p in unique if p.requires_grad),
        total_flops=collector.flops(),
        param_bytes=sum(p.numel() * p.element_size() for p in unique),
        input_bytes=sum(t.numel() * t.element_size() for t in _tensors((args, forward_kwargs))),
        activation_bytes=collector.activation_bytes,
        depth=depth,
        all_layers=collector.records,
    )
