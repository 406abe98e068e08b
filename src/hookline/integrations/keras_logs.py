"""``KerasLogBook``: the ``logs`` every Keras callback of a run shares, built as ``Model.fit`` builds them.

One book per Runner (registered with the first Keras callback, at priority
``HIGHEST`` so it is up to date before any callback reads it):

- per training batch: the running means, over the epoch so far, of the step's
  scalar outputs (``loss`` ...) and of the Runner's ``metrics`` computed on
  the training batches, each weighted by the batch size as Keras weights them;
- per epoch: those means at the epoch's end plus the validation metrics as
  ``val_<name>``, reported after the epoch's validation;
- per validation or test batch: running means of the step outputs and (when a
  callback has ``on_test_batch_end``) of the loop's metrics; at the end of the
  pass, its metrics.

An epoch that ``stop_training`` cuts short is validated before it is
reported, when a validation was due after it, as ``keras.Model.fit``
validates the epoch it stops in (:meth:`KerasLogBook._validate_cut_epoch`).

Like Keras's ``CallbackList``, every callback gets the same ``logs`` object of
a step, so what one callback adds (``ReduceLROnPlateau`` adds
``learning_rate``) the callbacks after it see. Values stay device tensors
until a callback reads them (:class:`~hookline.hooks.keras.Logs`): the book
adds no host-device sync.

Train metrics: each of ``runner.metrics`` is computed on every training batch
from the model's output (a forward hook keeps the last output of the step)
and the batch's targets (``(inputs, targets)`` batches; a step whose outputs
hold ``preds`` and ``targets`` gives those), under its own name; a
torchmetrics metric is a private copy, updated per batch. ``KerasLogBook(
train_metrics=False)`` registered before the callbacks turns this off (a book
registered after them is refused with a ``ConfigError`` when the run starts).

Example::

    >>> book = KerasLogBook()
    >>> book.priority, book.triggered_stages()[:2]
    ('HIGHEST', ['before_run', 'before_train'])
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError
from hookline.engine.hook import Hook
from hookline.engine.metric_names import prefixed
from hookline.hooks.keras_values import Logs, RunningMeans, batch_size

from ._cut_epoch import validate_cut_epoch
from .keras_batch_metrics import BatchMetrics, add_batch, training_metrics
from .keras_history import HistoryHook
from .keras_model import KerasModel, fit_params

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["KerasLogBook", "batch_size"]


def _sorted(values: Mapping[str, Any]) -> Logs:
    """Keras sorts the keys of every ``logs`` it hands out (``pythonify_logs``)."""
    return Logs({key: values[key] for key in sorted(values)})


def _plain(values: Mapping[str, Any]) -> dict[str, Any]:
    """A plain ``dict`` of floats, keys sorted (as Keras's ``pythonify_logs``): the values are
    read now (one host-device sync for device tensors)."""
    return _sorted(values).plain()


class KerasLogBook(Hook):
    """The shared ``logs`` of the Keras callbacks of one Runner (see the module docstring).

    Args:
        train_metrics: compute the Runner's ``metrics`` on the training batches too (Keras's
            ``accuracy`` next to ``val_accuracy``); register ``KerasLogBook(train_metrics=False)``
            before the Keras callbacks to leave them out (registered after them, the run
            refuses to start: they already share the book the first of them created).
    """

    priority = "HIGHEST"

    def __init__(self, train_metrics: bool = True) -> None:
        self.train_metrics = bool(train_metrics)
        #: whether a callback reads validation / test batch logs (their running metrics are
        #: computed then only); set by the callbacks' hooks as they join
        self.test_batch_metrics = False
        self._train = RunningMeans()
        self._test = RunningMeans()
        self._metrics: BatchMetrics | None = None
        self._pass_metrics: dict[str, BatchMetrics | None] = {}  # per loop mode, built once
        self._test_metrics: BatchMetrics | None = None  # those of the running pass
        self._batch_logs: Logs | None = None
        self._test_batch_logs: Logs | None = None
        self._resumed = False
        self._stopped_at: tuple[int, int, int] | None = None  # where an exception stopped training
        self._start_iter = 0  # runner.iter when the current train() started
        self._created_by: str | None = None  # the callback that made the run register it
        #: Keras's ``self.model``, one for all the run's callbacks (:meth:`facade`)
        self.model: KerasModel | None = None
        #: the automatic ``History`` (registered with the first callback, :meth:`of`)
        self.history_hook: HistoryHook | None = None
        #: between ``before_train`` and the end of training (a val / test pass outside it is
        #: Keras's ``evaluate``)
        self.training = False
        #: the epoch being reported: its index, logs, whether its validation is still to come
        self.epoch = 0
        self._epoch_values: dict[str, Any] = {}
        self._published: dict[str, Any] | None = None  # the reported epoch's values, unread
        self._epoch_logs: dict[str, Any] | None = None
        self._train_end_logs: dict[str, Any] | None = None
        self.pending_val = False
        #: counts epochs whose ``logs`` are final; a callback reports each serial once
        self.serial = 0
        #: the logs of the last val/test pass (a plain dict, as Keras gives ``on_test_end``)
        self.test_logs: dict[str, Any] = {}

    @classmethod
    def of(cls, runner: Runner, callback: Any = None) -> KerasLogBook:
        """The runner's book, registered now if it has none (``callback``: the Keras callback
        being registered, named if a book given later has to be refused)."""
        book = next((hook for hook in runner.hooks.hooks if isinstance(hook, cls)), None)
        if book is None:
            book = cls()
            book._created_by = type(callback).__name__ if callback is not None else "a callback"
            runner.register_hook(book)
        if book.history_hook is None:
            book.history_hook = HistoryHook(book)
            runner.register_hook(book.history_hook)
        return book

    def facade(self, runner: Runner) -> KerasModel:
        """The ``self.model`` all the run's Keras callbacks share (what one callback sets on it,
        the others see, as on Keras's one model)."""
        if self.model is None:
            self.model = KerasModel(runner)
        return self.model

    def before_run(self, runner: Runner) -> None:
        """One book per run: a second one (``KerasLogBook(train_metrics=False)`` registered
        after the callbacks) would be ignored by them, so the run does not start."""
        books = [hook for hook in runner.hooks.hooks if isinstance(hook, KerasLogBook)]
        if len(books) > 1 and books[0] is self:
            given = ", ".join(f"KerasLogBook(train_metrics={b.train_metrics})" for b in books[1:])
            why = (f"the first was registered with the Keras callback {self._created_by}, "
                   "whose logs it builds" if self._created_by else "the callbacks use the first")
            raise ConfigError(
                f"this Runner has {len(books)} KerasLogBook hooks and takes one: {given} came "
                f"after the Keras callbacks ({why}); register it before them (first in "
                "hooks=[...]) so that its options apply")

    # -- what callbacks read -------------------------------------------------------------------
    @property
    def epoch_logs(self) -> dict[str, Any] | None:
        """The reported epoch's logs: a plain dict of floats, built when a callback first reads
        it (one host-device sync per epoch); shared by the callbacks, so what one adds the
        callbacks after it see. None before the first epoch ends."""
        if self._epoch_logs is None and self._published is not None:
            self._epoch_logs = _plain(self._published)
        return self._epoch_logs

    def read_epoch_logs(self) -> dict[str, Any] | None:
        """The reported epoch's logs if a callback has read them (built), else None."""
        return self._epoch_logs

    @property
    def published(self) -> dict[str, Any] | None:
        """The reported epoch's values as they are (device tensors, running means: unread)."""
        return self._published

    @property
    def train_end_logs(self) -> dict[str, Any]:
        """``on_train_end``'s logs: the last reported epoch's, as published (without what
        callbacks added to ``epoch_logs``); {} when no epoch was reported."""
        if self._train_end_logs is None:
            self._train_end_logs = _plain(self._published) if self._published is not None else {}
        return self._train_end_logs

    def train_batch_logs(self) -> Logs:
        """The running means of this epoch, up to the batch that just ended (built once per step)."""
        if self._batch_logs is None:
            values: dict[str, Any] = dict(self._train.means())
            if self._metrics is not None:
                values.update(self._metrics.running())
            self._batch_logs = _sorted(values)
        return self._batch_logs

    def test_batch_logs(self) -> Logs:
        """The running means of this validation / test pass: the step's scalar outputs and
        the loop's metrics (when a callback reads them), as Keras's ``evaluate`` gives them."""
        if self._test_batch_logs is None:
            values: dict[str, Any] = dict(self._test.means())
            if self._test_metrics is not None:
                values.update(self._test_metrics.running())
            self._test_batch_logs = _sorted(values)
        return self._test_batch_logs

    # -- training --------------------------------------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        # an epoch train() goes on with where a failure stopped it keeps its running means,
        # as a resume from a checkpoint written there would
        going_on = self._stopped_at == runner.state.resume_point
        if not self._resumed and not going_on:
            self._train = RunningMeans()
        self._resumed = False
        self._stopped_at = None
        self._published = self._epoch_logs = self._train_end_logs = None
        self.pending_val = False
        self._start_iter = runner.iter  # a resumed run that trains nothing validates nothing
        self.training = True
        if self.history_hook is not None:
            self.history_hook.begin(runner, self.facade(runner), fit_params(runner))
        if self.train_metrics and self._metrics is None:
            self._metrics = BatchMetrics(training_metrics(runner), runner.model)
            if not self._metrics.metrics:
                self._metrics = None

    def before_train_epoch(self, runner: Runner) -> None:
        self._batch_logs = None

    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        if self._metrics is not None:
            self._metrics.capturing = True

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: Any = None) -> None:
        add_batch(self._train, self._metrics, data_batch, outputs)
        self._batch_logs = None

    def after_train_epoch(self, runner: Runner) -> None:
        self._finish_train_epoch(runner)
        if not runner.by_epoch:  # the run is one epoch; its validation came before
            if self._validate_cut_epoch(runner):
                return  # reported with that validation
            val_loop = runner.val_loop
            self._add_val(val_loop.last_metrics if val_loop is not None else {})
            self._publish()
            return
        loop = runner.train_loop
        self.pending_val = loop is not None and loop.val_due_after_epoch(runner.epoch + 1)
        if not self.pending_val:
            self._publish()

    def _finish_train_epoch(self, runner: Runner) -> None:
        values: dict[str, Any] = dict(self._train.means())
        if self._metrics is not None:
            values.update(self._metrics.running())
            self._metrics.reset()
        self.epoch = runner.epoch if runner.by_epoch else 0
        self._epoch_values = values
        self._train = RunningMeans()
        self._batch_logs = None

    def _validate_cut_epoch(self, runner: Runner) -> bool:
        """``stop_training`` cut the epoch short (in an iteration-based run: the run, its one
        epoch): validate it, as ``keras.Model.fit`` validates the epoch it stops in, when a
        validation was due after it; the epoch is reported with that validation, once for all
        the run's Keras callbacks. True when it ran."""
        loop, val_loop = runner.train_loop, runner.val_loop
        if loop is None or val_loop is None or not runner.stop_training \
                or runner.iter == self._start_iter or val_loop.ran_at_iter == runner.iter:
            return False
        if runner.by_epoch:
            if not loop.val_due_after_epoch(runner.epoch + 1):
                return False
        else:  # the run's end: not reached, not validated just now, and a validation due there
            last = loop.max_iters
            if last is None or runner.iter >= last or loop.val_due_after_iter(runner.iter) \
                    or not loop.val_due_after_iter(last):
                return False
        validate_cut_epoch(runner)  # with the Lightning trainer facade's, when the run has one
        return True

    @contextlib.contextmanager
    def cut_epoch_validation(self, runner: Runner) -> Iterator[None]:
        """The validation starting now is that of the epoch ``stop_training`` cut short
        (:func:`~._cut_epoch.validate_cut_epoch`, whichever bridge runs it): that epoch is
        reported with it, as ``fit`` reports it, before ``on_train_end``."""
        if not self.training:
            yield
            return
        if self._train.count:  # the cut epoch's batches, not summed up yet
            self._finish_train_epoch(runner)
        self.pending_val = True
        yield
        if self.pending_val:  # a validation without after_val_epoch: report what there is
            self._publish()

    def _add_val(self, metrics: Mapping[str, Any] | None) -> None:
        for key, value in (metrics or {}).items():
            self._epoch_values[prefixed("val", key)] = value

    def _publish(self) -> None:
        self._published = self._epoch_values
        self._epoch_logs = self._train_end_logs = None
        self.pending_val = False
        self.serial += 1

    def after_train(self, runner: Runner) -> None:
        if self.pending_val:  # stopped before the epoch's validation
            self._publish()
        elif self._train.count:  # stopped inside an epoch: Keras validates and reports it
            self._finish_train_epoch(runner)
            if not self._validate_cut_epoch(runner):
                self._publish()
        if self._metrics is not None:
            self._metrics.remove()
            self._metrics = None
        self.training = False

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        self.training = False
        self._stopped_at = runner.state.resume_point
        if self._metrics is not None:
            self._metrics.remove()
            self._metrics = None

    # -- validation and test ---------------------------------------------------------------------
    def _begin_pass(self, runner: Runner, mode: str) -> None:
        self._test = RunningMeans()
        self._test_batch_logs = None
        self._test_metrics = None
        if self.test_batch_metrics:
            if mode not in self._pass_metrics:
                loop = runner.val_loop if mode == "val" else runner.test_loop
                metrics = BatchMetrics(getattr(loop, "metrics", None) or {})
                self._pass_metrics[mode] = metrics if metrics.metrics else None
            self._test_metrics = self._pass_metrics[mode]
            if self._test_metrics is not None:
                self._test_metrics.reset()

    def before_val(self, runner: Runner) -> None:
        self._begin_pass(runner, "val")

    def before_test(self, runner: Runner) -> None:
        self._begin_pass(runner, "test")

    def _after_pass_iter(self, data_batch: Any, outputs: Any) -> None:
        add_batch(self._test, self._test_metrics, data_batch, outputs)
        self._test_batch_logs = None

    def after_val_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                       outputs: Any = None) -> None:
        self._after_pass_iter(data_batch, outputs)

    def after_test_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                        outputs: Any = None) -> None:
        self._after_pass_iter(data_batch, outputs)

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self.test_logs = _plain(metrics or {})
        if self.pending_val:
            self._add_val(metrics)
            self._publish()

    def after_test_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self.test_logs = _plain(metrics or {})

    # -- an epoch cut by a checkpoint resumes with its running means --------------------------------
    def state_dict(self) -> dict[str, Any]:
        if not self._train.count:
            return {}
        return {"train_means": self._train.state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "train_means" in state:
            self._train.load(state["train_means"])
            self._resumed = True
