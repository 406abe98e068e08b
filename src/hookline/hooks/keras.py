"""KerasCallback: write Runner hooks as Keras callbacks (``on_epoch_end(epoch, logs)`` ...).

Example::

    >>> from hookline.hooks import KerasCallback
    >>> class History(KerasCallback):
    ...     def __init__(self):
    ...         self.losses = []
    ...     def on_epoch_end(self, epoch, logs=None):
    ...         self.losses.append(logs["loss"])
    >>> History().triggered_stages()
    ['after_train_iter', 'after_train_epoch', 'after_val_epoch']
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError
from hookline.engine.data import loader_length
from hookline.engine.hook import STAGES, Hook, StageMethod
from hookline.engine.metric_names import prefixed
from hookline.engine.registries import HOOKS
from hookline.hooks.keras_values import Logs, RunningMeans, batch_size

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


# Keras method -> the stages it needs. on_epoch_end runs after the epoch's validation
# (Keras puts val_* metrics into its logs), so it needs after_val_epoch too, and the
# running means need after_train_iter.
_METHOD_STAGES: dict[str, tuple[str, ...]] = {
    "on_train_begin": ("before_train",),
    "on_train_end": ("after_train_iter", "after_train_epoch", "after_val_epoch", "after_train"),
    "on_epoch_begin": ("before_train_epoch",),
    "on_epoch_end": ("after_train_iter", "after_train_epoch", "after_val_epoch"),
    "on_train_batch_begin": ("before_train_iter",),
    # the epoch end starts the next epoch's running means (even without on_epoch_end)
    "on_train_batch_end": ("after_train_iter", "after_train_epoch"),
    "on_test_begin": ("before_val", "before_test"),
    "on_test_end": ("after_val_epoch", "after_test_epoch"),
    "on_test_batch_begin": ("before_val_iter", "before_test_iter"),
    "on_test_batch_end": ("before_val", "before_test", "after_val_iter", "after_test_iter"),
}
# Keras 2 names that Keras itself forwards to the on_train_batch_* methods
_ALIASES = {"on_batch_begin": "on_train_batch_begin", "on_batch_end": "on_train_batch_end"}
# what Keras passes each method, positionally (and what KerasCallback passes)
_ARGUMENTS = {name: ("logs",) if name in ("on_train_begin", "on_train_end", "on_test_begin",
                                          "on_test_end")
              else ("epoch", "logs") if name.startswith("on_epoch") else ("batch", "logs")
              for name in [*_METHOD_STAGES, *_ALIASES]}


def check_keras_signatures(callback: Any) -> None:
    """Each Keras method ``callback`` overrides takes what Keras passes it (a
    :class:`ConfigError` at registration, naming Keras's signature, rather than a TypeError
    at the end of the first epoch)."""
    cls = type(callback)
    for name, arguments in _ARGUMENTS.items():
        if not hasattr(cls, name) or getattr(cls, name) is getattr(KerasCallback, name, None):
            continue
        method = getattr(callback, name)
        try:
            signature = inspect.signature(method)
        except (TypeError, ValueError):  # no signature to read: called as Keras calls it
            continue
        try:
            signature.bind(*arguments)
        except TypeError:
            keras = ", ".join(f"{a}=None" if a == "logs" else a for a in arguments)
            raise ConfigError(
                f"{cls.__name__}.{name}{signature} does not take what Keras passes: Keras "
                f"calls {name}({', '.join(arguments)}); write def {name}(self, {keras})"
            ) from None


@functools.cache
def _overridden(cls: type) -> frozenset[str]:
    """The Keras methods ``cls`` overrides (Keras 2 aliases count as their targets)."""
    names = {m for m in _METHOD_STAGES if getattr(cls, m) is not getattr(KerasCallback, m)}
    names.update(target for alias, target in _ALIASES.items() if hasattr(cls, alias))
    return frozenset(names)


@HOOKS.register()
class KerasCallback(Hook):
    """Base class for hooks written the Keras way. Override any of:

    ==============================================  ==========================================
    Keras method                                    called
    ==============================================  ==========================================
    ``on_train_begin(logs)``                        before the first epoch (``before_train``)
    ``on_train_end(logs)``                          after training; ``logs`` of the last epoch
    ``on_epoch_begin(epoch, logs)``                 before each training epoch (0-based)
    ``on_epoch_end(epoch, logs)``                   after the epoch *and its validation*:
                                                    epoch means of the step outputs
                                                    (``loss`` ...), weighted by batch size
                                                    as Keras weights them, plus
                                                    ``val_<metric>``
    ``on_train_batch_begin(batch, logs)``           before each step (``batch``: index in
                                                    the epoch; ``logs`` empty)
    ``on_train_batch_end(batch, logs)``             after each step: running epoch means
    ``on_test_begin(logs)`` / ``on_test_end(logs)``  around validation and test; ``on_test_end``
                                                    gets the metrics
    ``on_test_batch_begin/end(batch, logs)``        around each validation or test step
    ==============================================  ==========================================

    ``self.runner`` is the Runner (``self.model`` its model, ``self.params``
    ``{"epochs", "steps"}``); set ``self.runner.stop_training = True`` to stop
    after the current iteration. Only the stages of the methods a subclass
    overrides are dispatched to it. ``logs`` values are floats computed from
    device tensors when read: at epoch level that is one sync per epoch; in
    the ``*_batch_end`` methods reading ``logs`` syncs every iteration, so
    read them every N batches on GPU (the running sums themselves cost no sync).
    In iteration-based runs (``max_iters``) the whole run is one "epoch".

    Example::

        class StopAtLoss(KerasCallback):
            def on_epoch_end(self, epoch, logs=None):
                if logs["loss"] < 0.1:
                    self.runner.stop_training = True
    """

    priority = "NORMAL"
    runner: Any = None
    #: Keras 2 method names this class dispatches too (so they are not flagged as stage typos)
    stage_aliases = tuple(_ALIASES)

    # -- the Keras API (no-ops) ------------------------------------------------------
    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Training starts."""

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Training ended; ``logs`` are those of the last epoch."""

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Training epoch ``epoch`` (0-based) starts."""

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Training epoch ``epoch`` and its validation ended."""

    def on_train_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """A training step on batch ``batch`` of the epoch starts."""

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """A training step ended; ``logs`` are the running means of this epoch."""

    def on_test_begin(self, logs: Logs | None = None) -> None:
        """Validation or test starts."""

    def on_test_end(self, logs: Logs | None = None) -> None:
        """Validation or test ended; ``logs`` are its metrics."""

    def on_test_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """A validation or test step starts."""

    def on_test_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """A validation or test step ended; ``logs`` are running means of this pass."""

    # -- Keras attributes ------------------------------------------------------------
    @property
    def model(self) -> torch.nn.Module | None:
        """The Runner's model (Keras' ``self.model``)."""
        return None if self.runner is None else self.runner.model

    @property
    def params(self) -> dict[str, Any]:
        """Keras' ``self.params``: ``epochs`` (or None for ``max_iters`` runs) and ``steps``."""
        runner = self.runner
        if self._params is not None:
            return self._params
        if runner is None:
            return {}
        if not runner.by_epoch:
            return {"epochs": None, "steps": runner.max_iters}
        # None for a loader without a length (an IterableDataset), as Keras gives
        steps = loader_length(runner.train_dataloader) if runner.train_dataloader is not None \
            else None
        return {"epochs": runner.max_epochs, "steps": steps}

    @params.setter
    def params(self, value: dict[str, Any] | None) -> None:
        # keras.callbacks.Callback.__init__ assigns params (a class deriving from both works)
        self._params = value

    _params: dict[str, Any] | None = None

    def set_params(self, params: dict[str, Any]) -> None:
        """Keras' setter: ``params`` replaces the values derived from the Runner."""
        self._params = params

    # -- which stages ----------------------------------------------------------------
    def _overridden(self) -> frozenset[str]:
        cls: type = type(self)  # a plain `type`: mypy wrongly finds type[KerasCallback] unhashable
        return _overridden(cls)

    def stage_callable(self, stage: str) -> StageMethod:
        """The stage method, once the overridden Keras methods are known to take what Keras
        passes (checked when the hook is registered)."""
        check_keras_signatures(self)
        return super().stage_callable(stage)

    def triggered_stages(self) -> list[str]:
        """The stages the overridden Keras methods need, in run order."""
        wanted = {s for m in self._overridden() for s in _METHOD_STAGES[m]}
        return [s for s in STAGES if s in wanted]

    def _method(self, name: str) -> Any:
        for alias, target in _ALIASES.items():
            if target == name and hasattr(type(self), alias) and \
                    getattr(type(self), name) is getattr(KerasCallback, name):
                return getattr(self, alias)
        return getattr(self, name)

    # -- state (the running means, so a resumed epoch reports the same means) ----------
    def state_dict(self) -> dict:
        if self._train_means is None or not self._train_means.count:
            return {}
        return {"train_means": self._train_means.state()}

    def load_state_dict(self, state: dict) -> None:
        if "train_means" in state:
            self._means("train").load(state["train_means"])

    _train_means: RunningMeans | None = None
    _test_means: RunningMeans | None = None
    _pending: tuple[int, Logs] | None = None
    _last_logs: Logs | None = None

    def _means(self, which: str) -> RunningMeans:
        attr = f"_{which}_means"
        if getattr(self, attr) is None:
            setattr(self, attr, RunningMeans())
        return getattr(self, attr)

    # -- training stages -----------------------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        self.runner = runner
        self.on_train_begin(Logs())

    def after_train(self, runner: Runner) -> None:
        self.runner = runner
        self._flush_epoch()
        self.on_train_end(self._last_logs if self._last_logs is not None else Logs())

    def before_train_epoch(self, runner: Runner) -> None:
        self.runner = runner
        self.on_epoch_begin(runner.epoch, Logs())

    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self.runner = runner
        self._method("on_train_batch_begin")(batch_idx, Logs())

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        self.runner = runner
        means = self._means("train")
        means.add(outputs, batch_size(data_batch, outputs))
        if "on_train_batch_end" in self._overridden():
            self._method("on_train_batch_end")(batch_idx, means.logs())

    def after_train_epoch(self, runner: Runner) -> None:
        self.runner = runner
        self._flush_epoch()
        logs = self._means("train").logs()
        self._train_means = None  # the next epoch's running means start from zero
        if not self._overridden() & {"on_epoch_end", "on_train_end"}:
            return  # only the batch methods: nothing reports this epoch
        if not runner.by_epoch:  # iteration-based: the run is one epoch, validated before
            for key, value in runner.message_hub.info.get("val_metrics", {}).items():
                logs[prefixed("val", key)] = value
            self._end_epoch(0, logs)
            return
        loop = runner.train_loop
        assert loop is not None  # after_train_epoch runs inside the training loop
        if loop.val_due_after_epoch(runner.epoch + 1):
            self._pending = (runner.epoch, logs)  # the loop validates next: report after it
        else:
            self._end_epoch(runner.epoch, logs)

    def _end_epoch(self, epoch: int, logs: Logs) -> None:
        self._last_logs = logs
        if "on_epoch_end" in self._overridden():
            self.on_epoch_end(epoch, logs)

    def _flush_epoch(self) -> None:
        """An epoch whose validation never came (training stopped) is reported now."""
        if self._pending is not None:
            (epoch, logs), self._pending = self._pending, None
            self._end_epoch(epoch, logs)

    # -- validation / test stages (the test ones are the same methods) ------------------------
    def before_val(self, runner: Runner) -> None:
        self.runner = runner
        self._test_means = RunningMeans()
        if "on_test_begin" in self._overridden():
            self.on_test_begin(Logs())

    def before_val_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self.runner = runner
        self.on_test_batch_begin(batch_idx, Logs())

    def after_val_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                       outputs: Any = None) -> None:
        self.runner = runner
        means = self._means("test")
        means.add(outputs, batch_size(data_batch, outputs))  # weighted by batch size, as Keras
        self.on_test_batch_end(batch_idx, means.logs())

    before_test, before_test_iter, after_test_iter = before_val, before_val_iter, after_val_iter

    def _test_end(self, runner: Runner, metrics: Mapping[str, float] | None) -> None:
        self.runner = runner
        if "on_test_end" in self._overridden():
            self.on_test_end(Logs(metrics))

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._test_end(runner, metrics)
        if self._pending is not None:
            (epoch, logs), self._pending = self._pending, None
            for key, value in (metrics or {}).items():
                logs[prefixed("val", key)] = value
            self._end_epoch(epoch, logs)

    def after_test_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._test_end(runner, metrics)
