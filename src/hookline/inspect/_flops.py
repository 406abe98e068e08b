"""FLOP formulas that ``torch.utils.flop_counter.FlopCounterMode`` lacks, and the counter ``summary`` uses
(:class:`FlopCounter`: torch's formulas and these, without FlopCounterMode's first-call import of dynamo).

FlopCounterMode counts an op only if it has a formula for it. Most layers
reach ``mm``/``addmm``/``convolution``/attention ops, which it has; these
fused kernels it has none for, so it would count 0:

* **Recurrent layers.** ``nn.LSTM`` in float32 on the CPU runs
  ``aten.mkldnn_rnn_layer`` (one call per layer and direction); on CUDA,
  LSTM/GRU/RNN run ``aten._cudnn_rnn`` (or ``miopen_rnn`` on ROCm, ``_lstm_mps``
  on Apple GPUs), one call for the whole stack. Elsewhere (GRU and RNN on
  the CPU, other dtypes, projections, packed sequences on the CPU) torch
  decomposes them into ``addmm``, which is counted. The formulas here give
  the same count as that decomposition: 2 FLOPs per multiply-add of the
  input-to-hidden, hidden-to-hidden and projection matrices, for every time
  step of every sequence (``sum(batch_sizes)`` steps for a packed one).
  Gate nonlinearities and element-wise products count 0, as everywhere.
* **CPU attention.** ``_scaled_dot_product_flash_attention_for_cpu`` and the
  other fused attention kernels without a formula get torch's own
  ``sdpa_flop_count``.

Example (an LSTM in float32 on the CPU, against the hand count)::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect._flops import flop_counter
    >>> lstm = nn.LSTM(300, 512, num_layers=2, batch_first=True)
    >>> with torch.no_grad(), flop_counter() as counter:
    ...     _ = lstm(torch.randn(1, 100, 300))
    >>> counter.get_total_flops() == 2 * 100 * (4 * 512 * (300 + 512) + 4 * 512 * (512 + 512))
    True
"""

from __future__ import annotations

import contextlib
import math
import sys
import types
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


def _rows(input_shape: Sequence[int], batch_sizes: Sequence[int] | None) -> int:
    """Time steps times sequences: every row the recurrence runs on."""
    if batch_sizes:
        return int(sum(batch_sizes))
    return math.prod(input_shape[:-1])


def _matrix_macs(weights: Sequence[Any]) -> int:
    """Multiply-adds per row: the input-to-hidden, hidden-to-hidden and projection matrices (2-D)."""
    return sum(math.prod(shape) for shape in weights if shape is not None and len(shape) == 2)


# FlopCounterMode hands the formulas the shapes of the tensor arguments (torch.Size, or lists of them).
def _mkldnn_rnn_layer_flops(input_shape: Any, weight0: Any, weight1: Any, *args: Any, **kwargs: Any) -> int:
    batch_sizes = args[5] if len(args) > 5 else kwargs.get("batch_sizes")
    return 2 * _rows(input_shape, batch_sizes) * _matrix_macs([weight0, weight1])


def _cudnn_rnn_flops(input_shape: Any, weights: Any, *args: Any, **kwargs: Any) -> int:
    # _cudnn_rnn(..., batch_sizes, dropout_state) / miopen_rnn(..., batch_sizes, dropout_state)
    batch_sizes = kwargs.get("batch_sizes", args[-2] if len(args) >= 2 else None)
    return 2 * _rows(input_shape, batch_sizes) * _matrix_macs(weights)


def _lstm_mps_flops(input_shape: Any, _hx: Any, params: Any, *args: Any, **kwargs: Any) -> int:
    return 2 * _rows(input_shape, None) * _matrix_macs(params)


def _cpu_sdpa_flops(query_shape: Any, key_shape: Any, value_shape: Any, *args: Any, **kwargs: Any) -> int:
    # torch.utils.flop_counter imports triton where it is installed: it loads when summary() runs.
    from torch.utils.flop_counter import sdpa_flop_count  # noqa: PLC0415
    return int(sdpa_flop_count(query_shape, key_shape, value_shape))


_FORMULAS = {
    "mkldnn_rnn_layer": _mkldnn_rnn_layer_flops,
    "_cudnn_rnn": _cudnn_rnn_flops,
    "miopen_rnn": _cudnn_rnn_flops,
    "_lstm_mps": _lstm_mps_flops,
    "_scaled_dot_product_flash_attention_for_cpu": _cpu_sdpa_flops,
    "_scaled_dot_product_fused_attention_overrideable": _cpu_sdpa_flops,
    "_scaled_dot_product_attention_math_for_mps": _cpu_sdpa_flops,
}


# Queries of sizes, strides and layout: the mode lets them through untouched (as FlopCounterMode does).
_PASS_THROUGH = ("sym_is_contiguous.default", "is_contiguous.default", "is_contiguous.memory_format",
                 "is_strides_like_format.default", "is_non_overlapping_and_dense.default", "size.default",
                 "sym_size.default", "stride.default", "sym_stride.default", "storage_offset.default",
                 "sym_storage_offset.default", "numel.default", "sym_numel.default", "dim.default")


def _overloads(names: Sequence[str]) -> frozenset[Any]:
    found = []
    for name in names:
        packet_name, _, overload = name.partition(".")
        packet = getattr(torch.ops.aten, packet_name, None)
        if packet is not None and hasattr(packet, overload):
            found.append(getattr(packet, overload))
    return frozenset(found)


class FlopCounter(TorchDispatchMode):
    """Counts FLOPs of the aten ops run inside it, with torch's formulas and those above.

    The counting is torch's own (``torch.utils.flop_counter``'s formulas; an
    op without one is decomposed when it can be, else counts 0), but the mode
    itself is lighter than ``FlopCounterMode``: no module tracker, one total,
    and its dispatch is wrapped in ``torch._dynamo.disable`` only once
    ``torch._dynamo`` is loaded. torch wraps every mode's dispatch so, and the
    wrapper's first call imports ``torch._dynamo``: about 1.5 s on a 2-core
    machine, nearly all of a first ``summary()`` call (benchmarks/summary_first_call.py).
    Once something has loaded dynamo (``torch.compile``, or ``torch.cond`` in
    eager mode, which traces the active modes), the wrapped dispatch runs, as
    in FlopCounterMode. ``torch.cond`` counts the branch taken.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in torch._dynamo.disable unless this says False:
        # _dispatcher below does that itself, once dynamo is loaded
        return False

    supports_higher_order_operators = True  # torch.cond runs its taken branch under the mode

    def __init__(self, registry: dict[Any, Any]) -> None:
        super().__init__()
        self.registry = registry
        self.total = 0
        self._pass_through = _overloads(_PASS_THROUGH)

    def get_total_flops(self) -> int:
        """FLOPs counted so far (2 per multiply-add)."""
        return self.total

    def _dispatcher(self) -> Any:
        if "torch._dynamo" in sys.modules:  # torch.cond (eager) traces modes: count outside dynamo
            return types.MethodType(_DISPATCH_OUTSIDE_DYNAMO, self)  # torch wants a bound method
        return self._dispatch

    __torch_dispatch__ = property(_dispatcher)

    def _dispatch(self, func: Any, _types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func in self._pass_through:
            return NotImplemented
        if not isinstance(func, torch._ops.OpOverload):  # noqa: SLF001 - a higher-order operator
            if func is getattr(torch.ops.higher_order, "cond", None):
                predicate, if_true, if_false, operands = args
                with self:
                    return (if_true if bool(predicate) else if_false)(*operands)
            return NotImplemented
        packet = func._overloadpacket  # noqa: SLF001 - torch's public way to an op's packet
        formula = self.registry.get(packet)
        if formula is None and func is not torch.ops.prim.device.default:
            with self:
                result = func.decompose(*args, **kwargs)
            if result is not NotImplemented:
                return result
        out = func(*args, **kwargs)
        if formula is not None:
            self.total += int(formula(*args, **kwargs, out_val=out))
        return out


# The dispatch as torch wraps every mode's (its first call imports torch._dynamo): used once dynamo
# is loaded, so that a compiling dynamo runs the counting eagerly instead of tracing into it.
_DISPATCH_OUTSIDE_DYNAMO = torch._disable_dynamo(FlopCounter._dispatch, recursive=True)  # noqa: SLF001


def flop_counter() -> FlopCounter:
    """A :class:`FlopCounter` with torch's formulas and the kernels above (those this torch build has)."""
    from torch.utils.flop_counter import flop_registry, shape_wrapper  # noqa: PLC0415 - see _cpu_sdpa_flops
    mapping = dict(flop_registry)
    for op, formula in _FORMULAS.items():
        packet = getattr(torch.ops.aten, op, None)
        if packet is not None:
            mapping[packet] = shape_wrapper(formula)
    return FlopCounter(mapping)


@contextlib.contextmanager
def no_mha_fastpath() -> Iterator[None]:
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
