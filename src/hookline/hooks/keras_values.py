"""Keras' ``logs`` values: a dict read lazily, and the running means behind it.

A Keras callback gets ``logs`` dicts of the epoch's running means; here
they stay device tensors until a callback reads one (one host-device sync
then, none for a callback that never reads its logs).

Example::

    >>> import torch
    >>> means = RunningMeans()
    >>> means.add({"loss": torch.tensor(1.0)}); means.add({"loss": torch.tensor(3.0)})
    >>> logs = means.logs()
    >>> isinstance(logs, dict), logs["loss"]
    (True, 2.0)
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from hookline.core.errors import closest_names


class _Mean:
    """``total / count``, computed when read (``total`` may be a device tensor)."""

    __slots__ = ("total", "count")

    def __init__(self, total: Any, count: int) -> None:
        self.total, self.count = total, count

    def value(self) -> float:
        total = self.total.item() if isinstance(self.total, torch.Tensor) else self.total
        return float(total) / max(self.count, 1)


def _resolved(value: Any) -> Any:
    """A float for a running mean or a device tensor (one host-device sync), else ``value``."""
    if isinstance(value, _Mean):
        return value.value()
    if isinstance(value, torch.Tensor):
        return float(value.item())
    return value


def _is_lazy(value: Any) -> bool:
    return isinstance(value, (_Mean, torch.Tensor))


class LogsKeyError(KeyError):
    """A key that a ``logs`` dict does not hold: a :class:`KeyError` whose message lists the
    keys it holds (``except KeyError`` catches it as before).

    Example::

        >>> str(LogsKeyError("val_acc", ["loss", "val_accuracy"]))
        "'val_acc' is not in logs; its keys: 'loss', 'val_accuracy' (did you mean 'val_accuracy'?)"
    """

    def __init__(self, key: Any, keys: list[str]) -> None:
        super().__init__(key)
        self.key, self.keys = key, keys

    def __str__(self) -> str:
        listed = ", ".join(repr(k) for k in self.keys) if self.keys else "none"
        close = closest_names(str(self.key), [str(k) for k in self.keys])
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        return f"{self.key!r} is not in logs; its keys: {listed}{hint}"


class Logs(dict):
    """Keras' ``logs``: a ``dict`` whose values become floats when first read.

    Values may be device tensors or running means of them; the first read of
    any value (``logs["loss"]``, ``logs.copy()``, ``dict(logs)``,
    ``json.dumps(logs)``, ``logs | {...}``, iterating) converts them all to
    floats in place, which costs one host-device sync on GPU, so a callback
    that never reads its logs never syncs. From then on it is a plain dict
    holding floats; ``copy()``, ``|``, pickling and ``copy.deepcopy`` give
    plain ``dict``\\ s, as Keras's logs are.

    Example::

        >>> import json
        >>> logs = Logs({"loss": torch.tensor(0.5)})
        >>> isinstance(logs, dict), json.dumps(logs), logs | {"lr": 0.1}
        (True, '{"loss": 0.5}', {'loss': 0.5, 'lr': 0.1})
    """

    __slots__ = ("_lazy",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        super().__init__(values or {})
        self._lazy = any(_is_lazy(value) for value in dict.values(self))

    def _resolve(self) -> None:
        """Every value as a float (once: then the storage holds only plain values)."""
        if self._lazy:
            self._lazy = False
            for key, value in dict.items(self):
                if _is_lazy(value):
                    dict.__setitem__(self, key, _resolved(value))

    def __setitem__(self, key: str, value: Any) -> None:
        if _is_lazy(value):
            self._lazy = True
        dict.__setitem__(self, key, value)

    def plain(self) -> dict[str, Any]:
        """A plain ``dict`` copy, its values floats."""
        self._resolve()
        return dict(dict.items(self))

    # -- reads: resolve first (dict's C code reads its storage directly) ---------------------
    def __getitem__(self, key: str) -> Any:
        if self._lazy and dict.__contains__(self, key):  # a missing key: no value is read
            self._resolve()
        return dict.__getitem__(self, key)

    def __missing__(self, key: str) -> Any:  # dict.__getitem__ calls it for a missing key
        raise LogsKeyError(key, list(dict.keys(self)))

    def get(self, key: str, default: Any = None) -> Any:
        self._resolve()
        return dict.get(self, key, default)

    def __iter__(self) -> Iterator[str]:  # an override: dict(logs), {**logs} then read values
        self._resolve()
        return dict.__iter__(self)

    def keys(self) -> Any:
        self._resolve()
        return dict.keys(self)

    def values(self) -> Any:
        self._resolve()
        return dict.values(self)

    def items(self) -> Any:  # what json.dumps reads of a dict subclass
        self._resolve()
        return dict.items(self)

    def pop(self, key: str, *default: Any) -> Any:
        self._resolve()
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[str, Any]:
        self._resolve()
        return dict.popitem(self)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._resolve()
        return dict.setdefault(self, key, default)

    def copy(self) -> dict[str, Any]:
        return self.plain()

    def __or__(self, other: Any) -> Any:
        if not isinstance(other, Mapping):
            return NotImplemented
        return self.plain() | dict(other)

    def __ror__(self, other: Any) -> Any:
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(other) | self.plain()

    def __eq__(self, other: object) -> bool:
        self._resolve()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.plain())

    def __reduce__(self) -> tuple[Any, ...]:  # pickle and copy.copy: a plain dict
        return (dict, (self.plain(),))

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(self.plain(), memo)


def batch_size(data_batch: Any, outputs: Any = None) -> int:
    """Samples in a batch (the first dimension of the step's ``targets``, else of the batch's
    first tensor); 1 if unknown. Keras weights a step's values by it.

    Example::

        >>> batch_size((torch.zeros(5, 3), torch.zeros(5)))
        5
    """
    if isinstance(outputs, Mapping) and isinstance(outputs.get("targets"), torch.Tensor):
        data_batch = outputs["targets"]
    stack = [data_batch]
    while stack:
        item = stack.pop(0)
        if isinstance(item, torch.Tensor):
            return int(item.shape[0]) if item.dim() else 1
        stack.extend(item.values() if isinstance(item, Mapping) else
                     item if isinstance(item, (list, tuple)) else ())
    return 1


class RunningMeans:
    """Running sums of the scalar step outputs, kept on the device (no sync)."""

    def __init__(self) -> None:
        self.sums: dict[str, Any] = {}
        self.count = 0

    def add(self, outputs: Mapping[str, Any] | None, weight: int = 1) -> None:
        """Add one step's scalar outputs, each counted ``weight`` times (Keras weights a
        step's loss by its batch size)."""
        if not isinstance(outputs, Mapping):
            return
        sums = self.sums
        for key, value in outputs.items():
            if isinstance(value, torch.Tensor):
                if value.numel() != 1:
                    continue
                value = value.detach().reshape(())
                if weight != 1:
                    value = value.double() * weight
                # float64 sums: one kernel per value (the add promotes), exact over long epochs
                sums[key] = sums[key] + value if key in sums else value.double()
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                value = float(value) * weight
                sums[key] = sums[key] + value if key in sums else value
        self.count += weight

    def means(self) -> dict[str, _Mean]:
        """The means so far, each computed when read."""
        return {key: _Mean(total, self.count) for key, total in self.sums.items()}

    def logs(self) -> Logs:
        """The means so far, as ``Logs`` (nothing is computed until a value is read)."""
        return Logs(self.means())

    def state(self) -> dict:
        return {"sums": dict(self.sums), "count": self.count}

    def load(self, state: Mapping[str, Any]) -> None:
        self.sums = dict(state.get("sums", {}))
        self.count = int(state.get("count", 0))
