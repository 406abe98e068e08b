"""``mmengine.device``: which accelerator this process uses.

Example::

    >>> from hookline.compat.mmengine.device import get_device, is_npu_available
    >>> get_device() in ("cuda", "mps", "cpu"), is_npu_available()
    (True, False)
"""

from __future__ import annotations

import torch


def is_cuda_available() -> bool:
    return torch.cuda.is_available()


def is_mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def is_npu_available() -> bool:
    """Ascend NPUs are not supported by hookline."""
    return False


def is_mlu_available() -> bool:
    """Cambricon MLUs are not supported by hookline."""
    return False


def is_musa_available() -> bool:
    """Moore Threads GPUs are not supported by hookline."""
    return False


def get_device() -> str:
    """``"cuda"``, ``"mps"`` or ``"cpu"``: the device kind this process would use."""
    if is_cuda_available():
        return "cuda"
    if is_mps_available():
        return "mps"
    return "cpu"


def get_max_cuda_memory(device: torch.device | None = None) -> int:
    """Peak allocated CUDA memory in MB since the last call (which resets the peak)."""
    if not is_cuda_available():
        return 0
    peak = torch.cuda.max_memory_allocated(device=device)
    torch.cuda.reset_peak_memory_stats(device=device)
    return int(peak // (1024 * 1024))


__all__ = ["get_device", "get_max_cuda_memory", "is_cuda_available", "is_mlu_available",
           "is_mps_available", "is_musa_available", "is_npu_available"]
