"""The inputs ``summary`` runs a model on: built from ``input_size``/``dtypes`` or moved from ``input_data``.

``input_size`` is one shape (batch dimension included) or a list of shapes,
one per positional input; inside a list, ``[]`` is a 0-d tensor (a scalar
such as a diffusion model's timestep). A dimension of 0, a negative one, an
empty ``input_size`` or anything that is not a shape is a ConfigError naming
``input_size``. ``dtypes`` are ``torch.dtype``s, legacy tensor types
(``torch.LongTensor``) or names (``"long"``, ``"float16"``: :data:`DTYPE_NAMES`).
Generated floating-point inputs are ``torch.rand`` values; integer and bool
inputs are zeros, a valid index for any ``nn.Embedding``.

Example::

    >>> import torch
    >>> from hookline.inspect._inputs import make_inputs
    >>> args, kwargs = make_inputs([(2, 3), []], None, [torch.float32, torch.long], torch.device("cpu"), {})
    >>> [tuple(a.shape) for a in args], args[1].dtype
    ([(2, 3), ()], torch.int64)
    >>> make_inputs((2, 0), None, None, torch.device("cpu"), {})
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: input_size (2, 0) has a dimension of size 0: ...
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import torch
from torch.nn.utils.rnn import PackedSequence

from hookline.core import ConfigError

from .features import map_tensors

_SHAPE_HELP = ("input_size must be a shape such as (1, 3, 32, 32), batch dimension included, or a list of "
               "shapes, one per positional input ([] for a 0-d tensor)")


def _is_dim(value: Any) -> bool:
    """An int dimension (numpy's integers too, as torchinfo takes them; not a bool)."""
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _is_shape(value: Any) -> bool:
    return isinstance(value, (tuple, list, torch.Size)) and all(_is_dim(d) for d in value)


def _sizes(input_size: Any) -> list[tuple[int, ...]]:
    if not isinstance(input_size, (tuple, list, torch.Size)) or len(input_size) == 0:
        raise ConfigError(f"{_SHAPE_HELP}; got {input_size!r}")
    sizes = [input_size] if _is_shape(input_size) else list(input_size)
    if len(sizes) == 1 and isinstance(sizes[0], list) and not _is_shape(sizes[0]):
        sizes = list(sizes[0])  # torchinfo's [[(1, 3, 32, 32)]]: a list holding the list of shapes
    for size in sizes:
        if not _is_shape(size):
            raise ConfigError(f"{_SHAPE_HELP}; got {input_size!r}")
        if any(d < 0 for d in size):
            raise ConfigError(f"input_size {input_size!r} has a negative dimension")
        if any(d == 0 for d in size):
            raise ConfigError(f"input_size {input_size!r} has a dimension of size 0: every dimension must be "
                              ">= 1 (for a 0-d scalar input, give [] in a list of shapes)")
    return [tuple(operator.index(d) for d in size) for size in sizes]


#: dtype names accepted by ``dtypes`` and ``hookline inspect --dtypes``
DTYPE_NAMES: dict[str, torch.dtype] = {
    "float": torch.float32, "float32": torch.float32, "double": torch.float64, "float64": torch.float64,
    "half": torch.float16, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "long": torch.int64, "int64": torch.int64, "int": torch.int32, "int32": torch.int32,
    "short": torch.int16, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}


def parse_dtype(value: Any, what: str = "dtypes") -> torch.dtype:
    """A ``torch.dtype`` from a dtype, a legacy tensor type or a name (``"long"``); else a ConfigError."""
    if isinstance(value, str):
        name = value.strip().lower().removeprefix("torch.")
        if name in DTYPE_NAMES:
            return DTYPE_NAMES[name]
        raise ConfigError(f"{what}: unknown dtype {value!r}; accepted names: {', '.join(DTYPE_NAMES)}")
    return _dtype(value)


def _dtype(value: Any) -> torch.dtype:
    if isinstance(value, str):
        return parse_dtype(value)
    if isinstance(value, torch.dtype):
        return value
    legacy = getattr(value, "dtype", None)  # torch.FloatTensor, torch.cuda.LongTensor ...
    if isinstance(value, type) and isinstance(legacy, torch.dtype):
        return legacy
    raise ConfigError(f"dtypes must be torch dtypes (torch.float32, torch.long ...) or their names "
                      f"('float', 'long' ...), got {value!r}")


def _with_batch(size: tuple[int, ...], batch_dim: int) -> tuple[int, ...]:
    if not -len(size) - 1 <= batch_dim <= len(size):
        raise ConfigError(f"batch_dim {batch_dim} is out of range for input_size {size} "
                          f"(from {-len(size) - 1} to {len(size)})")
    at = batch_dim if batch_dim >= 0 else len(size) + 1 + batch_dim
    return (*size[:at], 1, *size[at:])


def _to_device(device: torch.device) -> Any:
    def move(t: torch.Tensor) -> torch.Tensor:
        return t.to(device)
    return move


def make_inputs(input_size: Any, input_data: Any, dtypes: Any, device: torch.device,
                kwargs: dict[str, Any],
                batch_dim: int | None = None) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """``(args, kwargs)`` for the forward pass, or None when nothing is given (parameters only).

    ``batch_dim`` (torchinfo's): ``input_size`` leaves the batch dimension out; a
    dimension of 1 is inserted there in every generated input.
    """
    if batch_dim is not None:
        if isinstance(batch_dim, bool) or not isinstance(batch_dim, int):
            raise ConfigError(f"batch_dim must be an int (where input_size leaves out the batch dimension) "
                              f"or None, got {batch_dim!r}")
        if input_data is not None or input_size is None:
            raise ConfigError("batch_dim works with input_size only (torchinfo's meaning: input_size leaves "
                              "out the batch dimension); input_data already has its batch dimension")
    if input_data is not None and input_size is not None:
        raise ConfigError("give input_size or input_data, not both (input_data is the input itself; "
                          "input_size makes random inputs of that shape)")
    if input_data is not None:
        data = map_tensors(input_data, _to_device(device))  # a PackedSequence's batch_sizes stay on the CPU
        if isinstance(data, (torch.Tensor, PackedSequence)):
            return (data,), dict(kwargs)
        if isinstance(data, Mapping):
            return (), {**data, **kwargs}
        if isinstance(data, (list, tuple)):
            return tuple(data), dict(kwargs)
        return (data,), dict(kwargs)
    if input_size is None:
        return ((), dict(kwargs)) if kwargs else None
    sizes = _sizes(input_size)
    if batch_dim is not None:
        sizes = [_with_batch(size, batch_dim) for size in sizes]
    if dtypes is None:
        kinds = [torch.float32] * len(sizes)
    elif isinstance(dtypes, (list, tuple)):
        kinds = [_dtype(d) for d in dtypes]
    else:
        kinds = [_dtype(dtypes)] * len(sizes)
    if len(kinds) != len(sizes):
        raise ConfigError(f"dtypes has {len(kinds)} entries for {len(sizes)} input sizes")
    args = tuple(torch.rand(size, device=device).to(dtype) if dtype.is_floating_point
                 else torch.zeros(size, dtype=dtype, device=device) for size, dtype in zip(sizes, kinds))
    return args, dict(kwargs)
