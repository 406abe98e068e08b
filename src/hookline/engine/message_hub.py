"""MessageHub: the scalars of a run, kept on the device until a logger reads them.

Each Runner owns one (no global singleton). Training code and hooks
``update`` scalars every iteration; tensors are only detached, never
``.item()``-ed, so updating costs no host-device sync. Loggers read smoothed
values at their interval, paying one sync per read.

Example::

    >>> import torch
    >>> from hookline.engine.message_hub import MessageHub
    >>> hub = MessageHub(window=2)
    >>> for value in (1.0, 2.0, 4.0):
    ...     hub.update("train/loss", torch.tensor(value))
    >>> hub.mean("train/loss"), hub.latest("train/loss")
    (3.0, 4.0)
"""

from __future__ import annotations

from collections import deque
from typing import Any

import torch


class MessageHub:
    """Windowed scalar history plus a small dict of run information."""

    def __init__(self, window: int = 10) -> None:
        self.window = window
        self._scalars: dict[str, deque[Any]] = {}
        self.info: dict[str, Any] = {}

    def update(self, key: str, value: Any) -> None:
        """Record one value of ``key`` (a number or a 0-dim tensor; tensors are detached)."""
        history = self._scalars.get(key)
        if history is None:
            history = self._scalars[key] = deque(maxlen=self.window)
        if isinstance(value, torch.Tensor):
            value = value.detach()
        history.append(value)

    def update_many(self, prefix: str, values: dict[str, Any]) -> None:
        """Record the scalar entries of ``values`` as ``prefix/name``."""
        for name, value in values.items():
            if isinstance(value, torch.Tensor):
                if value.numel() != 1:
                    continue
            elif not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            self.update(f"{prefix}/{name}", value)

    def keys(self, prefix: str = "") -> list[str]:
        """Recorded keys starting with ``prefix``."""
        return [k for k in self._scalars if k.startswith(prefix)]

    def __contains__(self, key: object) -> bool:
        return key in self._scalars

    def latest(self, key: str) -> float:
        """The last value of ``key`` as a float (one sync if it is a device tensor)."""
        return _to_float(self._scalars[key][-1])

    def mean(self, key: str, count: int | None = None) -> float:
        """The mean of the last ``count`` (default: window) values, with one sync."""
        history = list(self._scalars[key])
        if count is not None:
            history = history[-count:]
        tensors = [v for v in history if isinstance(v, torch.Tensor)]
        if not tensors:
            return sum(float(v) for v in history) / len(history)
        if len(tensors) == len(history):  # the common case: one stack, one cast, one sync
            try:
                return float(torch.stack(tensors).double().mean().item())
            except RuntimeError:
                pass  # shapes or devices differ: one by one below
        device = tensors[0].device
        stacked = torch.stack([
            v.to(device=device, dtype=torch.float64).reshape(()) if isinstance(v, torch.Tensor)
            else torch.tensor(float(v), dtype=torch.float64, device=device)
            for v in history
        ])
        return float(stacked.mean().item())

    def clear(self, prefix: str = "") -> None:
        """Forget the histories of keys starting with ``prefix``."""
        for key in self.keys(prefix):
            del self._scalars[key]


def _to_float(value: Any) -> float:
    return float(value.item()) if isinstance(value, torch.Tensor) else float(value)
