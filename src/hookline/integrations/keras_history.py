"""Keras's automatic ``History``: ``fit`` adds one when its callbacks have none, and ``model.history`` is it.

``keras.Model.fit`` appends a ``History`` callback after the user's (unless one
of them is a ``History``), sets ``model.history`` to it before
``on_train_begin`` and returns it. In a hookline run with Keras callbacks,
:class:`HistoryHook` plays that part: the book (:class:`KerasLogBook`) calls
:meth:`HistoryHook.begin` first thing in each ``train()``, which picks the
user's ``History`` or makes a fresh one and sets the shared ``self.model``
facade's ``history``; the hook itself runs at priority ``LOWEST``, after every
callback, so that at epoch ``e``'s ``on_epoch_end`` a callback sees ``e``
epochs in ``self.model.history`` (and the values callbacks added to the logs,
``learning_rate`` from ``ReduceLROnPlateau``, are recorded), as in Keras.
``runner.train()`` does not return it: read ``callback.model.history``.

The epochs reach the History when ``model.history`` is read (each read
catches up), so a run whose callbacks never read their logs nor the history
makes no host-device sync for it.

Example::

    >>> from types import SimpleNamespace
    >>> history = new_history()
    >>> history.set_model(SimpleNamespace())
    >>> history.on_train_begin()
    >>> history.on_epoch_end(0, {"loss": 0.5})
    >>> history.epoch, history.history
    ([0], {'loss': [0.5]})
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from hookline.engine.hook import Hook
from hookline.hooks.keras_values import Logs

from ._detect import KERAS_MODULES, class_named

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["HistoryHook", "is_history", "new_history"]


class _History:
    """``keras.callbacks.History`` for runs whose callbacks are not Keras's (Keras not loaded)."""

    def __init__(self) -> None:
        self.history: dict[str, list[Any]] = {}
        self.epoch: list[int] = []
        self.model: Any = None
        self.params: dict[str, Any] = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def on_train_begin(self, logs: Any = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        if self.model is not None:
            self.model.history = self


def new_history() -> Any:
    """A fresh ``keras.callbacks.History`` (when Keras is loaded; else a stand-in)."""
    keras = sys.modules.get("keras")
    callbacks = getattr(keras, "callbacks", None)
    return callbacks.History() if callbacks is not None else _History()


def is_history(obj: Any) -> bool:
    """Whether ``obj`` is a ``keras.callbacks.History`` (Keras 3 or ``tf_keras``)."""
    return class_named(obj, "History", KERAS_MODULES)


def _user_history(runner: Runner) -> Any:
    """The ``History`` among the run's Keras callbacks, or None."""
    for hook in runner.hooks.hooks:
        callback = getattr(hook, "callback", None)
        if callback is not None and is_history(callback):
            return callback
    return None


class HistoryHook(Hook):
    """The ``History`` that ``fit`` adds: registered with a run's first Keras callback, it
    records each reported epoch after every callback (see the module docstring)."""

    priority = "LOWEST"

    def __init__(self, book: Any) -> None:
        self.book = book
        self.history: Any = None  # this train()'s automatic History; None when the user gave one
        self._seen = book.serial
        #: reported epochs not yet given to the History: (epoch, their logs or raw values)
        self._pending: list[tuple[int, dict[str, Any], bool]] = []

    def triggered_stages(self) -> list[str]:
        return ["after_train_epoch", "after_val_epoch", "after_train"]

    def begin(self, runner: Runner, model: Any, params: dict[str, Any]) -> None:
        """A ``train()`` starts (called by the book, before any ``on_train_begin``): the user's
        ``History`` or a fresh one becomes ``model.history``."""
        self._seen = self.book.serial
        self._pending = []
        user = _user_history(runner)
        self.history = None if user is not None else new_history()
        model.on_history_read(None if user is not None else self.catch_up)
        model.history = user if user is not None else self.history
        if self.history is not None:
            self.history.set_model(model)
            self.history.set_params(params)
            self.history.on_train_begin({})

    def _record(self) -> None:
        """Note the epoch the callbacks just got (the History gets it when read)."""
        book = self.book
        if self.history is None or book.serial == self._seen:
            return
        self._seen = book.serial
        read = book.read_epoch_logs()  # the callbacks' shared dict, if one of them read it
        if read is not None:
            self._pending.append((book.epoch, read, True))
        elif book.published is not None:
            self._pending.append((book.epoch, book.published, False))

    def catch_up(self) -> None:
        """Give the History the epochs reported since the last read (their values read now)."""
        pending, self._pending = self._pending, []
        for epoch, values, plain in pending:
            logs = values if plain else Logs({key: values[key] for key in sorted(values)}).plain()
            self.history.on_epoch_end(epoch, logs)

    def after_train_epoch(self, runner: Runner) -> None:
        self._record()

    def after_val_epoch(self, runner: Runner, metrics: Any = None) -> None:
        self._record()

    def after_train(self, runner: Runner) -> None:
        self._record()

    def __repr__(self) -> str:
        return "HistoryHook()"
