"""The counters of Keras's built-in callbacks, saved in hookline checkpoints so a resume is exact.

``keras.callbacks.EarlyStopping`` and ``ReduceLROnPlateau`` count epochs
without improvement; ``fit`` starts them from zero (``on_train_begin``), and
Keras's ``BackupAndRestore`` does not keep them either. In a hookline run the
callback's hook saves them with the checkpoint (:func:`callback_state`) and,
on ``resume``, sets them again right after the callback's ``on_train_begin``
reset them (:func:`restore_state`), so a resumed run stops and lowers the
rate at the epochs an uninterrupted one does. Other callbacks keep no state
across a resume (their attributes are as ``on_train_begin`` leaves them).

Example::

    >>> class EarlyStopping:  # stands in for keras.callbacks.EarlyStopping
    ...     wait, best, stopped_epoch, best_epoch, best_weights = 1, 0.25, 0, 3, None
    >>> EarlyStopping.__module__ = "keras.src.callbacks.early_stopping"
    >>> callback_state(EarlyStopping())
    {'wait': 1, 'best': 0.25, 'stopped_epoch': 0, 'best_epoch': 3, 'best_weights': None}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from ._detect import KERAS_MODULES, class_named

__all__ = ["COUNTERS", "callback_state", "restore_state"]

#: Keras callback class -> the attributes that carry its progress across epochs
COUNTERS: dict[str, tuple[str, ...]] = {
    "EarlyStopping": ("wait", "best", "stopped_epoch", "best_epoch", "best_weights"),
    "ReduceLROnPlateau": ("wait", "best", "cooldown_counter"),
}


def _counters(callback: Any) -> tuple[str, ...]:
    for name, attrs in COUNTERS.items():
        if class_named(callback, name, KERAS_MODULES):
            return attrs
    return ()


def _to_saved(value: Any) -> Any:
    """A checkpoint-safe value (``torch.load(weights_only=True)``): numbers as Python numbers,
    arrays (``best_weights``) as tensors."""
    if isinstance(value, (list, tuple)):
        return [_to_saved(item) for item in value]
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value)).clone()
    if isinstance(value, (np.generic, torch.Tensor)) and np.size(value) == 1:
        return value.item()
    return value


def _from_saved(name: str, value: Any) -> Any:
    if name == "best_weights" and isinstance(value, list):
        return [item.numpy() if isinstance(item, torch.Tensor) else item for item in value]
    return value


def callback_state(callback: Any) -> dict[str, Any]:
    """The counters of a built-in Keras callback (:data:`COUNTERS`); {} for others."""
    return {name: _to_saved(getattr(callback, name)) for name in _counters(callback)
            if hasattr(callback, name)}


def restore_state(callback: Any, state: Mapping[str, Any]) -> None:
    """Set the counters ``callback_state`` saved (after ``on_train_begin`` reset them)."""
    for name in _counters(callback):
        if name in state:
            setattr(callback, name, _from_saved(name, state[name]))
