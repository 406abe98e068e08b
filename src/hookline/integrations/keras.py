"""Keras callbacks in a hookline Runner: ``KerasCallbackHook`` runs one at the matching stages.

``Runner(hooks=[keras.callbacks.EarlyStopping(...)])`` wraps the callback
automatically (the ``keras`` adapter of ``HOOK_ADAPTERS``); so is any object
with Keras's callback methods (``on_epoch_end(epoch, logs)`` ...). The
callback sees what ``keras.Model.fit`` gives it:

- ``self.model``: a :class:`~hookline.integrations.keras_model.KerasModel`
  (``stop_training``, ``optimizer.learning_rate``, ``get_weights()`` ...),
  one for all the run's callbacks; ``model.history`` is the run's ``History``
  (:mod:`.keras_history`);
- ``self.params``: ``{"verbose": "auto", "epochs": max_epochs, "steps":
  batches per epoch}`` (an iteration-based run is one epoch of ``max_iters``;
  ``steps`` is None for a train dataloader without a length, as in Keras); in
  a ``runner.val()`` / ``runner.test()`` outside training, ``evaluate``'s
  ``{"epochs": 1, "steps": batches of the pass}``;
- ``logs``: dicts from the run's shared :class:`~hookline.integrations.keras_logs.KerasLogBook`.

A resumed run gets back the counters of ``EarlyStopping`` and
``ReduceLROnPlateau`` (:mod:`.keras_state`).

Keras method          called at
====================  =====================================================
on_train_begin        ``before_train``
on_epoch_begin        ``before_train_epoch``
on_train_batch_begin  ``before_train_iter`` (``on_batch_begin`` too)
on_train_batch_end    ``after_train_iter`` (``on_batch_end`` too)
on_epoch_end          after the epoch *and its validation* (``val_*`` in logs;
                      an epoch ``stop_training`` cut short is validated first
                      when a validation was due after it, as ``fit`` does)
on_test_begin/end     around each validation and test pass
on_test_batch_*       around each validation and test step
on_train_end          ``after_train``
====================  =====================================================

Callbacks that need Keras's own saving or a Keras optimizer are refused with
one ``ConfigError`` naming the hookline equivalent (:data:`REFUSED`). This
module imports no Keras; ``KERAS_BACKEND`` defaults to ``torch`` when it is
imported first (Keras reads it at its own import).

Example::

    >>> from hookline.integrations.keras import keras_methods
    >>> class Stop:
    ...     def on_epoch_end(self, epoch, logs=None):
    ...         pass
    >>> sorted(keras_methods(Stop()))
    ['on_epoch_end']
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError, HookError
from hookline.core.errors import closest_names
from hookline.engine.hook import STAGES, Hook
from hookline.engine.metric_names import VAL_PREFIXES, prefixed, reported_names
from hookline.hooks.keras import check_keras_signatures

from ._detect import KERAS_MODULES, class_named, is_keras_callback
from .keras_logs import KerasLogBook
from .keras_model import eval_params, fit_params
from .keras_state import callback_state, restore_state

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

os.environ.setdefault("KERAS_BACKEND", "torch")

__all__ = ["REFUSED", "KerasCallbackHook", "keras_methods", "wrap_keras_callback"]

#: Keras's callbacks that watch a ``monitor`` of the epoch logs
MONITORING = ("EarlyStopping", "ReduceLROnPlateau")

#: Keras callbacks a hookline run cannot host, and what to use instead
REFUSED = {
    "ModelCheckpoint": "it saves a Keras model (model.save / save_weights in .keras / .weights.h5 "
                       "files); use hookline's CheckpointHook: {'type': 'CheckpointHook', "
                       "'interval': 1, 'save_best': 'val_loss', 'rule': 'less'}",
    "BackupAndRestore": "it backs up and restores a Keras model's variables; hookline runs "
                        "resume from their own checkpoints (model, optimizer, epoch, and the "
                        "counters of EarlyStopping and ReduceLROnPlateau): keep CheckpointHook "
                        "and pass resume='auto' (hookline train ... --resume auto)",
    "OrbaxCheckpoint": "it saves a Keras model with Orbax; use hookline's CheckpointHook",
    "TensorBoard": "it writes through TensorFlow's summary ops; use hookline's "
                   "TensorboardLoggerHook ({'type': 'TensorboardLoggerHook'})",
    "SwapEMAWeights": "it swaps the EMA weights of a Keras optimizer (use_ema=True); use "
                      "hookline's EMAHook, which validates with the averaged weights",
}

# Keras method -> the stages it needs (on_epoch_end waits for the epoch's validation)
_STAGES: dict[str, tuple[str, ...]] = {
    "on_train_begin": ("before_train",),
    "on_train_end": ("after_train",),
    "on_epoch_begin": ("before_train_epoch",),
    "on_epoch_end": ("after_train_epoch", "after_val_epoch", "after_train"),
    "on_train_batch_begin": ("before_train_iter",),
    "on_train_batch_end": ("after_train_iter",),
    "on_test_begin": ("before_val", "before_test"),
    # before_val / before_test too: a pass outside training sets evaluate's params
    "on_test_end": ("before_val", "before_test", "after_val_epoch", "after_test_epoch"),
    "on_test_batch_begin": ("before_val", "before_test", "before_val_iter", "before_test_iter"),
    "on_test_batch_end": ("before_val", "before_test", "after_val_iter", "after_test_iter"),
}
# Keras 2 names: Keras's Callback forwards on_train_batch_* to them
_ALIASES = {"on_batch_begin": "on_train_batch_begin", "on_batch_end": "on_train_batch_end"}


def _does_something(callback: Any, name: str) -> bool:
    method = getattr(callback, name, None)
    if not callable(method):
        return False
    return not getattr(method, "_is_default", False)  # keras.utils.default marks the no-ops


def keras_methods(callback: Any) -> frozenset[str]:
    """The Keras methods ``callback`` implements (a no-op default of ``keras.callbacks.Callback``
    does not count; a Keras 2 alias counts as its ``on_train_batch_*`` method)."""
    names = {name for name in _STAGES if _does_something(callback, name)}
    names.update(target for alias, target in _ALIASES.items() if _does_something(callback, alias))
    return frozenset(names)


def check_keras_callback(callback: Any) -> None:
    """A :class:`ConfigError` naming the hookline equivalent for callbacks a run cannot host."""
    for name, why in REFUSED.items():
        if class_named(callback, name, KERAS_MODULES):
            package = type(callback).__module__.split(".")[0]  # keras, or tf_keras
            raise ConfigError(f"{package}.callbacks.{name} cannot run in a hookline Runner: {why}")


class KerasCallbackHook(Hook):
    """Runs one Keras callback at the Runner's stages (see the module docstring)."""

    priority = "NORMAL"

    def __init__(self, callback: Any, book: KerasLogBook, runner: Runner) -> None:
        check_keras_callback(callback)
        check_keras_signatures(callback)  # def on_epoch_end(self, logs): at registration
        self.callback = callback
        self.book = book
        self.model = book.facade(runner)  # one for all the run's callbacks, as in Keras
        self.methods = keras_methods(callback)
        if "on_test_batch_end" in self.methods:
            book.test_batch_metrics = True  # its logs have the metrics' running values
        self._calls = {name: self._resolve(name) for name in self.methods}
        self._seen = book.serial  # epochs published before this callback joined are not its own
        self._stages = {"before_train"}.union(*(_STAGES[m] for m in self.methods))
        self._attach(runner)
        _check_monitor(callback, runner)

    def _resolve(self, name: str) -> Any:
        method = getattr(self.callback, name, None)
        if callable(method) and not getattr(method, "_is_default", False):
            return method
        if is_keras_callback(self.callback) and callable(method):
            return method  # Keras's default forwards to the Keras 2 alias
        alias = next(a for a, target in _ALIASES.items() if target == name)
        return getattr(self.callback, alias)

    def _attach(self, runner: Runner, params: dict[str, Any] | None = None) -> None:
        """``set_model`` / ``set_params`` (``fit``'s params unless given), or the attributes
        for plain objects."""
        params = fit_params(runner) if params is None else params
        for setter, attr, value in (("set_model", "model", self.model),
                                    ("set_params", "params", params)):
            method = getattr(self.callback, setter, None)
            if callable(method):
                method(value)
            else:
                try:
                    setattr(self.callback, attr, value)
                except AttributeError:
                    pass  # a read-only attribute of a duck-typed callback: it reads its own

    _restored: dict[str, Any] | None = None  # counters loaded from a checkpoint, set after reset

    def state_dict(self) -> dict[str, Any]:
        """The counters of a built-in callback (EarlyStopping, ReduceLROnPlateau), for resume."""
        return callback_state(self.callback)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Set them now, and again after ``on_train_begin`` resets them."""
        restore_state(self.callback, state)
        self._restored = dict(state) if state else None

    @property
    def state_key(self) -> str:
        return f"keras:{type(self.callback).__name__}"

    def triggered_stages(self) -> list[str]:
        return [stage for stage in STAGES if stage in self._stages]

    def __repr__(self) -> str:
        return f"KerasCallbackHook({type(self.callback).__name__})"

    @property
    def table_label(self) -> str:
        """How ``runner.hook_table()`` names it: with the callback it runs."""
        return f"KerasCallbackHook[{type(self.callback).__name__}]"

    def _call(self, name: str, *args: Any) -> None:
        method = self._calls.get(name)
        if method is not None:
            try:
                method(*args)
            except HookError:
                raise
            except Exception as exc:  # names the user's callback and its Keras method
                raise HookError(self.callback, name, exc) from exc

    def _report_epoch(self) -> None:
        book = self.book
        if book.serial != self._seen and book.epoch_logs is not None:
            self._seen = book.serial
            self._call("on_epoch_end", book.epoch, book.epoch_logs)

    # -- training ------------------------------------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        """``on_train_begin``. A run that goes on (a resume, or ``train()`` again after a stop)
        keeps the built-in callbacks' counters (from the checkpoint, or as they were) and a
        ``CSVLogger``'s rows: it appends, as ``append=True`` would."""
        self._attach(runner)  # the loader (steps) may have changed since registration
        self._seen = self.book.serial
        going_on = runner.iter > 0 or runner.epoch > 0
        if self._restored is None and going_on:
            self._restored = callback_state(self.callback) or None
        with _appending(self.callback, going_on):
            self._call("on_train_begin", {})
        if self._restored is not None:
            restore_state(self.callback, self._restored)
            self._restored = None

    def before_train_epoch(self, runner: Runner) -> None:
        self._call("on_epoch_begin", runner.epoch if runner.by_epoch else 0, {})

    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self._call("on_train_batch_begin", batch_idx, {})

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: Any = None) -> None:
        self._call("on_train_batch_end", batch_idx, self.book.train_batch_logs())

    def after_train_epoch(self, runner: Runner) -> None:
        self._report_epoch()

    def after_train(self, runner: Runner) -> None:
        self._report_epoch()
        self._call("on_train_end", self.book.train_end_logs)

    # -- validation and test -------------------------------------------------------------------------
    def _begin_pass(self, runner: Runner, loader: Any) -> None:
        """A pass outside training is Keras's ``evaluate``: its own ``params``."""
        if not self.book.training:
            self._attach(runner, eval_params(loader))
        self._call("on_test_begin", {})

    def before_val(self, runner: Runner) -> None:
        self._begin_pass(runner, runner.val_dataloader)

    def before_test(self, runner: Runner) -> None:
        self._begin_pass(runner, runner.test_dataloader)

    def before_val_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self._call("on_test_batch_begin", batch_idx, {})

    def before_test_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self._call("on_test_batch_begin", batch_idx, {})

    def after_val_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                       outputs: Any = None) -> None:
        self._call("on_test_batch_end", batch_idx, self.book.test_batch_logs())

    def after_test_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                        outputs: Any = None) -> None:
        self._call("on_test_batch_end", batch_idx, self.book.test_batch_logs())

    def after_val_epoch(self, runner: Runner, metrics: Mapping[str, float] | None = None) -> None:
        self._call("on_test_end", self.book.test_logs)
        self._report_epoch()

    def after_test_epoch(self, runner: Runner, metrics: Mapping[str, float] | None = None) -> None:
        self._call("on_test_end", self.book.test_logs)


@contextlib.contextmanager
def _appending(callback: Any, going_on: bool) -> Iterator[None]:
    """A ``keras.callbacks.CSVLogger`` opens its file in ``on_train_begin``, emptying it unless
    ``append=True``: a run that goes on appends (the rows of its earlier epochs are the user's
    data), its ``append`` put back afterwards."""
    if not going_on or not class_named(callback, "CSVLogger", KERAS_MODULES) \
            or getattr(callback, "append", True):
        yield
        return
    callback.append = True
    try:
        yield
    finally:
        callback.append = False


def _check_monitor(callback: Any, runner: Runner) -> None:
    """The ``monitor`` of Keras's EarlyStopping / ReduceLROnPlateau: a name the run's logs will
    not have is refused (where they are all known: Keras would warn at every epoch end and
    never act), and a ``mode="auto"`` monitor learns its direction now, as Keras would at
    the first epoch end: a metric of unknown direction is refused here."""
    monitor = getattr(callback, "monitor", None)
    if not isinstance(monitor, str) or not any(
            class_named(callback, name, KERAS_MODULES) for name in MONITORING):
        return
    known = _known_log_keys(runner)
    if known is not None and monitor not in known:
        close = closest_names(monitor, sorted(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        if monitor.startswith(VAL_PREFIXES) and runner.val_loop is None:
            hint = "; the run has no validation to report it (give val_dataloader=)"
        raise ConfigError(
            f"{type(callback).__name__}(monitor={monitor!r}): this run's Keras logs have no "
            f"{monitor!r}{hint} (they have {', '.join(sorted(known))})")
    if getattr(callback, "monitor_op", 0) is None and callable(
            getattr(callback, "_set_monitor_op", None)):
        try:
            callback._set_monitor_op()  # noqa: SLF001  (Keras's own first step, taken early)
        except ValueError as exc:
            raise ConfigError(f"{type(callback).__name__}(monitor={monitor!r}): {exc} "
                              "(hookline knows a metric's direction when its name is one of "
                              "Keras's, e.g. 'accuracy')") from None


def _known_log_keys(runner: Runner) -> set[str] | None:
    """The keys of the run's Keras epoch logs when all are known before it runs: a model the
    Runner's ``loss_fn`` trains (no step methods of its own) and metrics whose names are
    known (the built-in ones); None otherwise."""
    model = runner.model
    if runner.loss_fn is None or any(callable(getattr(model, step, None)) for step in (
            "train_step", "training_step", "val_step", "validation_step")):
        return None
    names, complete = reported_names(runner.metrics, {"loss"})
    if not complete:
        return None
    keys = {name for name in names if not name.startswith(VAL_PREFIXES)} | {"learning_rate"}
    if runner.val_loop is not None:
        keys |= {prefixed("val", name) for name in names}
    return keys


def wrap_keras_callback(callback: Any, runner: Runner) -> KerasCallbackHook:
    """The hook that runs ``callback`` in ``runner`` (the ``keras`` adapter's ``wrap``)."""
    for hook in runner.hooks.hooks:
        if isinstance(hook, KerasCallbackHook) and hook.callback is callback:
            raise ConfigError(f"{type(callback).__name__} is already registered with this Runner")
    return KerasCallbackHook(callback, KerasLogBook.of(runner, callback), runner)
