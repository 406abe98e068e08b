"""FLOP formulas that ``torch.utils.flop_counter.FlopCounterMode`` lacks, and the counter ``summary`` uses.

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
from collections.abc import Iterator, Sequence
from typing import Any

import torch


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


def flop_counter() -> Any:
    """A silent ``FlopCounterMode`` that also counts the kernels above (those this torch build has)."""
    from torch.utils.flop_counter import FlopCounterMode  # noqa: PLC0415 - see _cpu_sdpa_flops
    mapping = {}
    for op, formula in _FORMULAS.items():
        packet = getattr(torch.ops.aten, op, None)
        if packet is not None:
            mapping[packet] = formula
    return FlopCounterMode(display=False, custom_mapping=mapping)


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
