"""``HistoryBuffer``: MMEngine's view of one scalar's recent history in the message hub.

``runner.message_hub.get_scalar("train/loss")`` returns one. Values stay
as they were recorded (device tensors are not read) until a statistic is
asked for; each statistic then costs one host-device sync.

Example::

    >>> from hookline.engine.message_hub import MessageHub
    >>> hub = MessageHub()
    >>> for loss in (4.0, 2.0, 3.0):
    ...     hub.update_scalar("train/loss", loss)
    >>> buffer = hub.get_scalar("train/loss")
    >>> buffer.current(), buffer.mean(2), buffer.max(), buffer.min(), len(buffer)
    (3.0, 2.5, 4.0, 2.0, 3)
"""

from __future__ import annotations

import math
import warnings
from array import array
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

import torch


def to_float(value: Any) -> float:
    """A number or a one-element tensor as a float (one sync for a device tensor)."""
    return float(value.item()) if isinstance(value, torch.Tensor) else float(value)


def _floats(values: list[Any]) -> list[float]:
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    if not tensors:
        return [float(v) for v in values]
    if len(tensors) == len(values):
        try:  # one stack, one copy to the host
            return [float(x) for x in torch.stack([t.reshape(()) for t in tensors])
                    .double().cpu().tolist()]
        except RuntimeError:
            pass  # devices or dtypes differ: one by one
    return [to_float(v) for v in values]


class ScalarWindow(NamedTuple):
    """The last records of one scalar, as stored (device tensors unread), and their counts
    (None: one sample each). Taking one is cheap; :meth:`mean` reads the values, so a
    logger can take it on the training thread and average it on its writer thread.

    Example::

        >>> import torch
        >>> ScalarWindow([torch.tensor(1.0), torch.tensor(2.0)]).mean()
        1.5
        >>> ScalarWindow([1.0, 4.0], [3, 1]).mean()  # count-weighted, as MMEngine's
        1.75
    """

    values: list[Any]
    counts: list[int] | None = None

    def mean(self) -> float:
        """The (count-weighted) mean, with one host-device sync for device tensors."""
        values, counts = self.values, self.counts
        if counts is not None:
            floats = _floats(values)
            return sum(v * c for v, c in zip(floats, counts)) / sum(counts)
        tensors = [v for v in values if isinstance(v, torch.Tensor)]
        if not tensors:  # numbers (times, floats a model logged)
            return float(sum(values)) / len(values)
        if len(tensors) == len(values):  # the common case: one stack, one read (one sync)
            if len(tensors) == 1 and tensors[0].numel() == 1:
                return float(tensors[0].item())
            try:
                stacked = torch.stack(tensors)
                if stacked.dim() == 1:  # scalars: an exact sum of the float32 values
                    return math.fsum(stacked.tolist()) / len(tensors)
                return float(stacked.double().mean().item())
            except RuntimeError:
                pass  # shapes or devices differ: one by one below
        device = tensors[0].device
        return float(torch.stack([
            v.to(device=device, dtype=torch.float64).reshape(()) if isinstance(v, torch.Tensor)
            else torch.tensor(float(v), dtype=torch.float64, device=device)
            for v in values
        ]).mean().item())


#: how many plain-number records (``train/time``, floats a hook records) a key keeps for
#: MMEngine's statistics (MMEngine keeps 1,000,000): 8 bytes each, so at most ~1.6 MB a key
LONG_HISTORY = 100_000


class HistoryBuffer:
    """The recorded values of one key (newest last) and their counts.

    ``mean(window)`` is MMEngine's ``sum(values * counts) / sum(counts)`` over
    the last ``window`` records. The hub keeps its ``window`` newest records
    per key as they came (device tensors unread; loggers raise it to their
    interval). A key recorded as plain numbers, one sample each (the timer's
    ``train/time``), also keeps its last :data:`LONG_HISTORY` values as floats,
    so MMEngine's statistics (``mean(len(loader) - 50)``, ``data``, ``len``)
    see that much history; for tensor values they see the hub's window, and a
    window asking for more than is kept, of more that were recorded, warns once.
    """

    _statistics: dict[str, Callable[..., Any]] = {}

    def __init__(self, values: deque[Any], counts: deque[int] | None = None,
                 key: str = "") -> None:
        self._values = values
        self._counts = counts
        self._key = key
        self._seen = len(values)
        self._long: array[float] | None = None
        if counts is None and not any(isinstance(v, torch.Tensor) for v in values):
            self._long = array("d", (float(v) for v in values))
        self._warned = False

    def update(self, value: Any, count: int = 1) -> None:
        """Record one more value (``count`` samples it stands for)."""
        self._seen += 1
        long = self._long
        if isinstance(value, torch.Tensor):
            value = value.detach()
            self._long = None
        elif long is not None:
            if type(value) is float and count == 1 and len(long) < 2 * LONG_HISTORY:
                long.append(value)  # the timer's values: the cheap path
            else:
                self._keep_long(value, count)
        self._values.append(value)
        if self._counts is not None:
            self._counts.append(count)
        elif count != 1:
            self._counts = deque([1] * (len(self._values) - 1) + [count],
                                 maxlen=self._values.maxlen)

    def _keep_long(self, value: Any, count: int) -> None:
        """Append a number to the long history (dropping the older half past twice its length:
        amortised O(1)); a weighted or non-number record ends it."""
        long = self._long
        assert long is not None
        if count != 1:
            self._long = None
            return
        try:
            long.append(value)
        except TypeError:
            self._long = None
            return
        if len(long) >= 2 * LONG_HISTORY:
            del long[:-LONG_HISTORY]

    def _history(self, count: int | None = None) -> list[float] | None:
        """The last ``count`` (at most :data:`LONG_HISTORY`) values of the long history, None
        where there is none or the hub's window holds it all."""
        long = self._long
        if long is None or len(long) <= len(self._values):
            return None
        count = LONG_HISTORY if count is None else min(count, LONG_HISTORY)
        return long[-count:].tolist()

    @property
    def weighted(self) -> bool:
        """Whether any record stands for more than one sample (``count != 1``)."""
        return self._counts is not None

    def recent(self, count: int | None = None) -> list[Any]:
        """The last ``count`` records as they were stored (device tensors stay unread)."""
        values = list(self._values)
        return values if count is None else values[-count:]

    def window(self, count: int | None = None) -> ScalarWindow:
        """The last ``count`` records (all kept ones if None) and their counts, unread."""
        values = self.recent(count)
        counts = None if self._counts is None else list(self._counts)
        if counts is not None and count is not None:
            counts = counts[-count:]
        return ScalarWindow(values, counts)

    @property
    def data(self) -> tuple[list[float], list[int]]:
        """``(values, counts)`` as Python lists (MMEngine returns numpy arrays): the long
        history of a plain-number key, else the hub's window."""
        history = self._history()
        if history is not None:
            return history, [1] * len(history)
        counts = list(self._counts) if self._counts is not None else [1] * len(self._values)
        return _floats(list(self._values)), counts

    def _window(self, window_size: int | None) -> tuple[list[float], list[int]]:
        if not self._values:
            raise ValueError("the history is empty")
        if window_size is not None and window_size < 1:
            raise ValueError(f"window_size must be >= 1, got {window_size}")
        history = self._history(window_size)
        if history is not None:
            return history, [1] * len(history)
        values, counts = self.data
        if window_size is not None:
            if window_size > len(values) and self._seen > len(values):
                self._warn_short(window_size, len(values))
            values, counts = values[-window_size:], counts[-window_size:]
        return values, counts

    def _warn_short(self, window_size: int, kept: int) -> None:
        """Warn once that a statistic asked for more records than are kept."""
        if self._warned:
            return
        self._warned = True
        name = f" of {self._key!r}" if self._key else ""
        warnings.warn(
            f"a statistic over the last {window_size} values{name} uses the {kept} kept of "
            f"{self._seen} recorded: the message hub keeps its window ({kept}) of tensor or "
            f"weighted scalars (MMEngine keeps 1,000,000); record plain floats (kept up to "
            f"{LONG_HISTORY:,}) or raise runner.message_hub.window", stacklevel=4)

    def mean(self, window_size: int | None = None) -> float:
        """Count-weighted mean of the last ``window_size`` records (all kept ones if None)."""
        values, counts = self._window(window_size)
        return sum(v * c for v, c in zip(values, counts)) / sum(counts)

    def max(self, window_size: int | None = None) -> float:
        return max(self._window(window_size)[0])

    def min(self, window_size: int | None = None) -> float:
        return min(self._window(window_size)[0])

    def current(self) -> float:
        """The newest value."""
        if not self._values:
            raise ValueError("the history is empty")
        return to_float(self._values[-1])

    @classmethod
    def register_statistics(cls, method: Callable[..., Any]) -> Callable[..., Any]:
        """Add a statistic ``method(buffer, *args)`` callable through :meth:`statistics`."""
        cls._statistics[method.__name__] = method
        return method

    def statistics(self, method_name: str, *args: Any, **kwargs: Any) -> Any:
        """Call a statistic by name: ``mean``, ``max``, ``min``, ``current`` or a registered one."""
        if method_name in self._statistics:
            return self._statistics[method_name](self, *args, **kwargs)
        if method_name in ("mean", "max", "min", "current"):
            return getattr(self, method_name)(*args, **kwargs)
        raise KeyError(f"unknown statistic {method_name!r}; known: mean, max, min, current, "
                       f"{', '.join(sorted(self._statistics))}")

    def __len__(self) -> int:
        long = self._long
        if long is None or len(long) <= len(self._values):
            return len(self._values)
        return min(len(long), LONG_HISTORY)

    def __repr__(self) -> str:
        return f"HistoryBuffer({len(self._values)} values)"
