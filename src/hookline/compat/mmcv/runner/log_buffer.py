"""``mmcv.runner.LogBuffer``: the values mmcv hooks log, averaged when a logger asks.

Values are kept as recorded (device tensors are not read) until
:meth:`average`, which converts them: one sync per log step, not per iteration.

Example::

    >>> from hookline.compat.mmcv.runner import LogBuffer
    >>> buffer = LogBuffer()
    >>> buffer.update({"loss": 1.0}, count=2); buffer.update({"loss": 4.0}, count=1)
    >>> buffer.average(); buffer.output["loss"], buffer.ready
    (2.0, True)
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from hookline.engine.history_buffer import to_float


class LogBuffer:
    """``val_history`` / ``n_history`` per key, ``output`` after :meth:`average`."""

    def __init__(self) -> None:
        self.val_history: OrderedDict[str, list[Any]] = OrderedDict()
        self.n_history: OrderedDict[str, list[int]] = OrderedDict()
        self.output: OrderedDict[str, Any] = OrderedDict()
        self.ready = False

    def clear(self) -> None:
        self.val_history.clear()
        self.n_history.clear()
        self.clear_output()

    def clear_output(self) -> None:
        self.output.clear()
        self.ready = False

    def update(self, vars: dict[str, Any], count: int = 1) -> None:
        if not isinstance(vars, dict):
            raise TypeError(f"LogBuffer.update needs a dict, got {type(vars).__name__}")
        for key, value in vars.items():
            self.val_history.setdefault(key, []).append(value)
            self.n_history.setdefault(key, []).append(count)

    def average(self, n: int = 0) -> None:
        """``output[key]`` = count-weighted mean of the latest ``n`` values (all when 0)."""
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        for key, values in self.val_history.items():
            recent = values[-n:] if n else values
            counts = self.n_history[key][-n:] if n else self.n_history[key]
            total = sum(counts)
            self.output[key] = sum(to_float(v) * c for v, c in zip(recent, counts)) / total
        self.ready = True


__all__ = ["LogBuffer"]
