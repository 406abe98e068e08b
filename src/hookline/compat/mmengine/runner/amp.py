"""``mmengine.runner.amp``: ``autocast``, MMEngine's mixed-precision context over
``torch.autocast``.

``device_type`` defaults to the device this process uses (``"cuda"``, ``"mps"`` or
``"cpu"``), ``dtype`` to torch's autocast dtype on CUDA and ``torch.bfloat16`` on the CPU
(the only one MMEngine allows there), ``cache_enabled`` to torch's current setting.

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.runner.amp import autocast
    >>> with autocast(device_type="cpu"):
    ...     out = torch.nn.Linear(2, 2)(torch.ones(1, 2))
    >>> out.dtype
    torch.bfloat16
    >>> with autocast(device_type="cpu", enabled=False):
    ...     torch.nn.Linear(2, 2)(torch.ones(1, 2)).dtype
    torch.float32
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from hookline.core import ConfigError

from ..device import get_device

__all__ = ["autocast"]


@contextmanager
def autocast(device_type: str | None = None, dtype: torch.dtype | None = None,
             enabled: bool = True, cache_enabled: bool | None = None) -> Iterator[None]:
    """Run the block under ``torch.autocast`` (MMEngine's defaults, above). A device type
    other than ``cuda``, ``cpu`` or ``mps`` is a ``ConfigError`` unless ``enabled=False``,
    and so is a dtype other than bfloat16 on the CPU or bfloat16 on a CUDA device without it."""
    device_type = get_device() if device_type is None else device_type
    if device_type not in ("cuda", "cpu", "mps"):
        if enabled:
            raise ConfigError(f"autocast: device_type must be 'cuda', 'cpu' or 'mps', got "
                              f"{device_type!r}")
        yield
        return
    if device_type == "cuda":
        dtype = torch.get_autocast_dtype("cuda") if dtype is None else dtype
        if dtype == torch.bfloat16 and enabled and not torch.cuda.is_bf16_supported():
            raise ConfigError("autocast: this CUDA device does not support bfloat16; give "
                              "dtype=torch.float16")
    elif device_type == "cpu":
        dtype = torch.bfloat16 if dtype is None else dtype
        if dtype != torch.bfloat16:
            raise ConfigError(f"autocast: on the CPU only torch.bfloat16 is supported (as in "
                              f"MMEngine), got {dtype}")
    if cache_enabled is None:
        cache_enabled = torch.is_autocast_cache_enabled()
    with torch.autocast(device_type=device_type, dtype=dtype, enabled=enabled,
                        cache_enabled=cache_enabled):
        yield
