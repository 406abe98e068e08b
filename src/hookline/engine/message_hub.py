"""MessageHub: the scalars of a run, kept on the device until a logger reads them.

Each Runner owns one (no global singleton; ``MessageHub.get_current_instance()``
is the hub of the Runner that ran last). Training code and hooks ``update``
scalars every iteration; tensors are only detached, never ``.item()``-ed,
so updating costs no host-device sync. Loggers read smoothed values at
their interval, paying one sync per read.

MMEngine's methods are here too: ``update_scalar`` / ``update_scalars`` /
``get_scalar`` (a :class:`~hookline.engine.history_buffer.HistoryBuffer`
with ``current()`` and ``mean(window)``), ``log_scalars``, and the run
information ``update_info`` / ``update_info_dict`` / ``get_info`` /
``pop_info`` / ``runtime_info`` (``epoch``, ``iter``, ``max_epochs`` and
``max_iters`` are always the Runner's live values). ``get_scalar("train/lr")``
(``train/momentum``; ``train/<name>.lr`` with several optimizers) reads the
optimizer's current value when nothing recorded the key: MMEngine's
RuntimeInfoHook records it every iteration, hookline reads it on demand.

Example::

    >>> import torch
    >>> from hookline.engine.message_hub import MessageHub
    >>> hub = MessageHub(window=2)
    >>> for value in (1.0, 2.0, 4.0):
    ...     hub.update("train/loss", torch.tensor(value))
    >>> hub.mean("train/loss"), hub.latest("train/loss")
    (3.0, 4.0)
    >>> hub.update_info("dataset_meta", {"classes": ["cat", "dog"]})
    >>> hub.get_info("dataset_meta")["classes"], hub.get_scalar("train/loss").current()
    (['cat', 'dog'], 4.0)
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import torch

from .history_buffer import HistoryBuffer, ScalarWindow, to_float


def plain_number(value: Any) -> int | float | None:
    """A NumPy scalar or one-element array as a Python number (MMEngine's message hub takes
    them); None for anything else, bools included.

        >>> import numpy as np
        >>> plain_number(np.float32(0.5)), plain_number(np.array([3])), plain_number("3")
        (0.5, 3, None)
    """
    if isinstance(value, (bool, str, bytes)) or type(value).__module__ != "numpy" \
            or getattr(value, "size", 0) != 1 or value.dtype.kind not in "iuf":
        return None
    number = value.item()
    return number if isinstance(number, (int, float)) else None


class MessageHub:
    """Windowed scalar history plus a dict of run information."""

    _current: ClassVar[weakref.ReferenceType[MessageHub] | None] = None

    def __init__(self, window: int = 10) -> None:
        self.window = window
        self._scalars: dict[str, HistoryBuffer] = {}
        self.info: dict[str, Any] = {}
        #: returns the run's live information (the Runner sets it: epoch, iter, ...)
        self.live_info: Callable[[], dict[str, Any]] | None = None
        #: ``key -> value or None``: scalars read live when nobody records them (the Runner
        #: sets it: ``train/lr`` ..., what MMEngine's RuntimeInfoHook records every iteration)
        self.live_scalar: Callable[[str], float | None] | None = None
        self.make_current()

    # -- the current hub (MMEngine's global instance, here: the last one made or run) --------
    def make_current(self) -> None:
        """Make this the hub :meth:`get_current_instance` returns."""
        MessageHub._current = weakref.ref(self)

    @classmethod
    def get_current_instance(cls) -> MessageHub:
        """The hub of the Runner that ran last (or of the last hub created)."""
        hub = cls._current() if cls._current is not None else None
        if hub is None:
            hub = cls()
        return hub

    # -- scalars ------------------------------------------------------------------------------
    def update(self, key: str, value: Any, count: int = 1) -> None:
        """Record one value of ``key`` (a number or a 0-dim tensor; tensors are detached)."""
        history = self._scalars.get(key)
        if history is None:
            history = self._scalars[key] = HistoryBuffer(deque(maxlen=self.window), key=key)
        history.update(value, count)

    def update_scalar(self, key: str, value: Any, count: int = 1,
                      resumed: bool = True) -> None:  # noqa: ARG002  (MMEngine's signature)
        """MMEngine's name for :meth:`update` (``resumed`` is accepted: hookline does not
        keep the hub in checkpoints)."""
        if isinstance(value, torch.Tensor) and value.numel() != 1:
            raise ValueError(f"update_scalar({key!r}) needs a number or a one-element tensor, "
                             f"got a tensor of shape {tuple(value.shape)}")
        self.update(key, value, count)

    def update_scalars(self, log_dict: Mapping[str, Any],
                       resumed: bool = True) -> None:  # noqa: ARG002  (MMEngine's signature)
        """Record each ``key: value`` (or ``key: {"value": v, "count": n}``) of ``log_dict``."""
        for key, value in log_dict.items():
            if isinstance(value, Mapping):
                if "value" not in value:
                    raise ValueError(f"update_scalars: {key!r} needs a 'value' entry, got {value}")
                self.update_scalar(key, value["value"], int(value.get("count", 1)))
            else:
                self.update_scalar(key, value)

    def update_many(self, prefix: str, values: dict[str, Any]) -> None:
        """Record the scalar entries of ``values`` as ``prefix/name`` (one-element tensors,
        Python and NumPy numbers, one-element NumPy arrays; not bools)."""
        for name, value in values.items():
            if isinstance(value, torch.Tensor):
                if value.numel() != 1:
                    continue
            elif not isinstance(value, (int, float)) or isinstance(value, bool):
                value = plain_number(value)
                if value is None:
                    continue
            self.update(f"{prefix}/{name}", value)

    def get_scalar(self, key: str) -> HistoryBuffer:
        """The :class:`HistoryBuffer` of ``key`` (``KeyError`` when it was never recorded)."""
        try:
            return self._scalars[key]
        except KeyError:
            value = self.live_scalar(key) if self.live_scalar is not None else None
            if value is not None:  # the current value, read now (MMEngine recorded it)
                return HistoryBuffer(deque([value], maxlen=self.window), key=key)
            raise KeyError(f"{key!r} is not in the message hub; recorded: "
                           f"{sorted(self._scalars)}") from None

    @property
    def log_scalars(self) -> dict[str, HistoryBuffer]:
        """Every recorded key and its history buffer."""
        return dict(self._scalars)

    def keys(self, prefix: str = "") -> list[str]:
        """Recorded keys starting with ``prefix``."""
        return [k for k in self._scalars if k.startswith(prefix)]

    def __contains__(self, key: object) -> bool:
        return key in self._scalars

    def latest(self, key: str) -> float:
        """The last value of ``key`` as a float (one sync if it is a device tensor)."""
        return self._scalars[key].current()

    def mean(self, key: str, count: int | None = None) -> float:
        """The mean of the last ``count`` (default: window) values, with one sync."""
        return self._scalars[key].window(count).mean()

    def windows(self, prefix: str, count: int | None = None) -> dict[str, ScalarWindow]:
        """``{name: window}`` of the last ``count`` records of each ``prefix<name>`` key, taken
        now and read later (:meth:`ScalarWindow.mean`): later updates do not change them."""
        start = len(prefix)
        return {key[start:]: buffer.window(count) for key, buffer in self._scalars.items()
                if key.startswith(prefix)}

    def clear(self, prefix: str = "") -> None:
        """Forget the histories of keys starting with ``prefix``."""
        for key in self.keys(prefix):
            del self._scalars[key]

    def remove(self, key: str) -> None:
        """Forget the history of exactly ``key`` (nothing when it was never recorded): a value
        recorded once per epoch, removed before each update, is never averaged with older ones."""
        self._scalars.pop(key, None)

    # -- run information ----------------------------------------------------------------------
    def update_info(self, key: str, value: Any,
                    resumed: bool = True) -> None:  # noqa: ARG002  (MMEngine's signature)
        """Set run information ``key`` (overwriting it)."""
        self.info[key] = value

    def update_info_dict(self, info_dict: Mapping[str, Any],
                         resumed: bool = True) -> None:  # noqa: ARG002  (MMEngine's signature)
        """:meth:`update_info` for each entry of ``info_dict``."""
        if not isinstance(info_dict, Mapping):
            raise TypeError(f"update_info_dict needs a dict, got {type(info_dict).__name__}")
        self.info.update(info_dict)

    def get_info(self, key: str, default: Any = None) -> Any:
        """Run information ``key`` (the Runner's live ``epoch``/``iter``/... first), or ``default``."""
        if self.live_info is not None:
            live = self.live_info()
            if key in live:
                return live[key]
        return self.info.get(key, default)

    def pop_info(self, key: str, default: Any = None) -> Any:
        """Remove run information ``key`` and return it (``default`` when absent)."""
        return self.info.pop(key, default)

    @property
    def runtime_info(self) -> dict[str, Any]:
        """All run information: what was set, with the Runner's live values over it."""
        live = self.live_info() if self.live_info is not None else {}
        return {**self.info, **live}


__all__ = ["HistoryBuffer", "MessageHub", "ScalarWindow", "to_float"]
