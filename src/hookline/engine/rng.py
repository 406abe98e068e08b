"""Capture and restore the global random number generators, checkpoint-safe.

:func:`get_rng_state` returns the state of Python's :mod:`random`, numpy's
global RNG (``np.random.*``), torch's CPU generator and, when CUDA is
available, every CUDA device's generator, as a dict of tensors and plain
values: it survives ``torch.save`` + ``torch.load(weights_only=True)``
(numpy arrays, which ``weights_only`` refuses, are stored as tensors).
:func:`set_rng_state` puts them back.

Not covered: ``numpy.random.Generator`` objects (``np.random.default_rng()``)
and ``torch.Generator`` objects you create yourself; save those explicitly.

Example::

    >>> import random, torch
    >>> state = get_rng_state()
    >>> first = (random.random(), torch.rand(1).item())
    >>> set_rng_state(state)
    >>> (random.random(), torch.rand(1).item()) == first
    True
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

__all__ = ["get_rng_state", "set_rng_state"]

_LOG = logging.getLogger("hookline")


def get_rng_state(include_cuda: bool = True) -> dict[str, Any]:
    """The state of the global RNGs, as tensors and plain values.

    Keys: ``"python"``, ``"numpy"``, ``"torch"`` and, when ``include_cuda``
    and ``torch.cuda.is_available()``, ``"cuda"`` (a list with one state per
    visible device; reading it initialises CUDA on every visible device).

    Example::

        >>> sorted(get_rng_state(include_cuda=False))
        ['numpy', 'python', 'torch']
    """
    version, internal, gauss_next = random.getstate()
    kind, keys, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": {
            "version": int(version),
            # 624 uint32 words and the position: exact in int64
            "internal": torch.tensor(internal, dtype=torch.int64),
            "gauss_next": gauss_next if gauss_next is None else float(gauss_next),
        },
        "numpy": {
            "kind": str(kind),
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.uint32).astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "torch": torch.get_rng_state(),
    }
    if include_cuda and torch.cuda.is_available():
        state["cuda"] = list(torch.cuda.get_rng_state_all())
    return state


def _byte_tensor(value: Any, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"set_rng_state: {what} state must be a tensor, got {type(value).__name__}")
    return value.detach().to(device="cpu", dtype=torch.uint8)


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore the global RNGs from a state made by :func:`get_rng_state`.

    Only the generators present in ``state`` are restored. CUDA states are
    restored when CUDA is available; if the number of devices differs from
    when the state was taken, the common devices are restored and a warning
    is logged on the ``"hookline"`` logger. Raises :class:`ValueError` for a
    state that is not in this format.

    Example::

        >>> import numpy as np
        >>> state = get_rng_state()
        >>> a = np.random.rand()
        >>> set_rng_state(state)
        >>> np.random.rand() == a
        True
    """
    if not isinstance(state, dict):
        raise ValueError(f"set_rng_state: expected a dict from get_rng_state(), got {type(state).__name__}")
    unknown = set(state) - {"python", "numpy", "torch", "cuda"}
    if unknown:
        raise ValueError(
            f"set_rng_state: unknown entries {sorted(unknown)}; expected python, numpy, torch, cuda"
        )
    try:
        if "python" in state:
            py = state["python"]
            internal = py["internal"]
            internal = internal.tolist() if isinstance(internal, torch.Tensor) else list(internal)
            gauss_next = py["gauss_next"]
            random.setstate((int(py["version"]), tuple(int(v) for v in internal), gauss_next))
        if "numpy" in state:
            npy = state["numpy"]
            keys = npy["keys"]
            keys = keys.cpu().numpy() if isinstance(keys, torch.Tensor) else np.asarray(keys)
            np.random.set_state(
                (
                    str(npy["kind"]),
                    keys.astype(np.uint32),
                    int(npy["pos"]),
                    int(npy["has_gauss"]),
                    float(npy["cached_gaussian"]),
                )
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"set_rng_state: malformed RNG state ({type(exc).__name__}: {exc})") from exc
    if "torch" in state:
        torch.set_rng_state(_byte_tensor(state["torch"], "torch"))
    if "cuda" in state:
        saved = list(state["cuda"])
        if not torch.cuda.is_available():
            _LOG.warning(
                "RNG state holds %d CUDA generator state(s) but CUDA is not available; not restored",
                len(saved),
            )
            return
        count = torch.cuda.device_count()
        if count != len(saved):
            _LOG.warning(
                "RNG state holds %d CUDA generator state(s) but %d device(s) are visible; "
                "restoring the first %d",
                len(saved),
                count,
                min(count, len(saved)),
            )
        for device, value in enumerate(saved[:count]):
            torch.cuda.set_rng_state(_byte_tensor(value, f"cuda:{device}"), device)


@contextlib.contextmanager
def rng_kept() -> Iterator[None]:
    """Inside, the global RNGs (python, numpy, torch, CUDA) may be drawn from; after, they are
    as they were before (what ``torch.random.fork_rng`` does for torch's, for all of them)."""
    saved = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(saved)
