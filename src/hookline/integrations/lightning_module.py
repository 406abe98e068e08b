"""A ``LightningModule`` trained by a hookline Runner: its ``self.log`` / ``self.log_dict`` and
``self.trainer`` work as in ``Trainer.fit``.

``Runner(model)`` with a ``lightning.pytorch.LightningModule`` registers a
:class:`LightningModuleHook` by itself (the ``lightning_module`` adapter of
``MODEL_ADAPTERS``, see :mod:`hookline.engine.model_adapters`). While the
Runner reads ``configure_optimizers()`` and while it trains, validates or
tests, the module's ``trainer`` is the run's
:class:`~hookline.integrations.lightning_trainer.LightningTrainer` (the
one Lightning callbacks of the run get too) and ``self.log`` writes into
the run (Lightning's own ``log_dict`` calls it for each entry). After the run
both are Lightning's again.

Where a logged value goes:

- in ``training_step`` (default ``on_step=True``): ``train/<name>`` in
  ``runner.message_hub`` every step, so ``LoggerHook`` prints its mean at
  each log line and ``metrics.jsonl`` gets it; ``on_epoch=True`` adds the
  epoch's mean as ``train/<name>`` (``<name>_epoch`` if also ``on_step``),
  published at the epoch's last batch (its log line has it), and in
  ``trainer.callback_metrics`` from the epoch's ``on_train_epoch_end`` on, as in
  Lightning (the step value until then);
- in ``validation_step`` / ``test_step`` (default ``on_epoch=True``): the
  epoch's mean (weighted by ``batch_size=``, or the size Lightning infers
  from the batch) becomes a validation / test metric under its name: in the
  ``Epoch(val)`` line, ``runner.message_hub.info["val_metrics"]``,
  ``val/<name>``, what ``CheckpointHook(save_best=...)``,
  ``EarlyStoppingHook`` and ``hookline test`` see. Across processes it is
  reduced like hookline's own metrics (every rank sees the same value);
- outside a batch (a Lightning callback's ``on_train_epoch_end`` ...): one
  epoch value, published at once;
- every value: ``trainer.callback_metrics`` (and ``progress_bar_metrics``
  for ``prog_bar=True``); unless ``logger=False``, ``trainer.logged_metrics``
  too, under Lightning's names (``<name>_step`` / ``<name>_epoch`` for a value
  logged both ways, a validation step's value too).

``reduce_fx`` may be ``"mean"``, ``"sum"``, ``"max"`` or ``"min"``;
``sync_dist=True`` reduces a training epoch value over the ranks (step
values stay per rank); ``enable_graph``, ``add_dataloader_idx``,
``metric_attribute`` and ``rank_zero_only`` are accepted and change nothing.
Nothing is read back from the device per step.

Example::

    >>> hook = LightningModuleHook.__new__(LightningModuleHook)
    >>> hook.priority
    'HIGHEST'
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError
from hookline.engine.hook import Hook

from .lightning_log import LoggedValue, ModuleLog, as_logged, epoch_results, is_metric, reduction
from .lightning_module_hooks import ModuleHooks
from .lightning_trainer import LightningTrainer
from .lightning_trainer_attrs import lightning_precision

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["LightningModuleHook", "attach_module"]

_MISSING = object()


class LightningModuleHook(Hook):
    """Binds a ``LightningModule``'s ``log`` and ``trainer`` to a Runner's run (see the module
    docstring); the hook methods it overrides (:attr:`calls`, see
    :mod:`.lightning_module_hooks`) are called by the run's ``LightningCalls``, after the
    Lightning callbacks' (:func:`attach_module` registers both)."""

    priority = "HIGHEST"  # before every hook that reads the metrics it adds

    def __init__(self, module: torch.nn.Module, trainer: LightningTrainer) -> None:
        self.module = module
        self.trainer = trainer
        self._log = ModuleLog(self)
        self._saved: tuple[Any, Any] | None = None  # (the previous trainer, an own `log`)
        self._values: dict[str, dict[str, LoggedValue]] = {"train": {}, "val": {}, "test": {}}
        self._phases: list[str] = []
        self._in_batch = False
        self._pending: dict[str, torch.Tensor] | None = None  # this training step's step values
        self._batch: Any = None
        self._batch_size: int | None = None
        self._pass_done = False
        self._metrics: dict[str, Any] | None = None  # the evaluation metrics being reported
        self._prog_bar: set[str] = set()  # names logged with prog_bar=True
        self._unlogged: set[str] = set()  # names logged with logger=False
        #: a training epoch's values, in the message hub already, that reach the trainer's
        #: metrics at the epoch's end (:meth:`release_epoch_values`), as in Lightning
        self._held: list[tuple[LoggedValue, torch.Tensor]] = []
        #: the module's own hook methods (``on_validation_epoch_end`` ...) it overrides
        self.calls = ModuleHooks(module)

    def __repr__(self) -> str:
        return f"LightningModuleHook({type(self.module).__name__})"

    # -- binding ------------------------------------------------------------------------------
    def bind(self) -> None:
        """Make ``module.trainer`` the run's trainer and ``module.log`` the run's (idempotent)."""
        if self._saved is not None:
            return
        module: Any = self.module
        try:
            previous = module.trainer
        except RuntimeError:  # "not attached to a `Trainer`"
            previous = None
        self._saved = (previous, vars(module).get("log", _MISSING))
        module.trainer = self.trainer
        module.log = self._log

    def unbind(self) -> None:
        """Give the module back its own ``trainer`` and ``log``."""
        if self._saved is None:
            return
        previous, own = self._saved
        self._saved = None
        module: Any = self.module
        module.trainer = previous
        if own is _MISSING:
            vars(module).pop("log", None)
        else:
            module.log = own

    def close_training(self) -> None:
        """Training is over (its last methods ran): ``self.log`` refuses training values."""
        self._phases, self._in_batch = [], False

    def release(self) -> None:
        """The run is over (its teardown ran): unbind."""
        self.unbind()
        self._phases, self._in_batch = [], False

    @contextlib.contextmanager
    def attached(self) -> Iterator[None]:
        """Bound for the duration (the Runner reads ``configure_optimizers()`` in it), after
        the module's ``configure_model()``; bound already: stays bound."""
        bound = self._saved is not None
        self.bind()
        try:
            yield
        finally:
            if not bound:
                self.unbind()

    # -- what self.log does ---------------------------------------------------------------------
    def record(self, name: str, value: Any, *, prog_bar: bool = False, on_step: bool | None = None,
               on_epoch: bool | None = None, reduce_fx: Any = "mean", sync_dist: bool = False,
               batch_size: int | None = None, logger: bool | None = None) -> None:
        """Record one ``self.log(name, value, ...)`` call of the module."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"self.log needs a name (a non-empty str), got {name!r}")
        if not self._phases:
            raise ConfigError(f"self.log({name!r}, ...) was called outside a training, validation "
                              "or test step of the run (Lightning refuses it there too)")
        phase, in_batch = self._phases[-1], self._in_batch
        if on_step is None:
            on_step = in_batch and phase == "train"
        if on_epoch is None:
            on_epoch = not (in_batch and phase == "train")
        if on_step and not in_batch:
            raise ConfigError(f"self.log({name!r}, ..., on_step=True) outside a batch: only "
                              "on_epoch values can be logged there")
        if not (on_step or on_epoch):
            return  # Lightning records nothing either
        logged = as_logged(name, value)
        options = (bool(on_step), bool(on_epoch), reduction(reduce_fx), bool(sync_dist))
        entry = self._values[phase].get(name)
        if entry is None:
            entry = self._values[phase][name] = LoggedValue(
                name, on_step=options[0], on_epoch=options[1], reduce=options[2], sync=options[3])
        elif entry.options != options:
            raise ConfigError(f"self.log({name!r}, ...) was called twice in the {phase} phase with "
                              f"different options {entry.options} and {options} (on_step, "
                              "on_epoch, reduce_fx, sync_dist): Lightning refuses it too")
        if prog_bar:
            self._prog_bar.add(name)
        if logger is False:
            self._unlogged.add(name)
        if on_step and not is_metric(logged):
            self._step_value(phase, entry, logged, prog_bar)
        if on_epoch:
            entry.add(logged, self._size(entry, logged, batch_size))
            if not in_batch and (phase == "train" or self._metrics is not None):
                self._publish(phase, [entry])  # e.g. from a callback's on_*_epoch_end

    def _step_value(self, phase: str, entry: LoggedValue, value: torch.Tensor,
                    prog_bar: bool) -> None:
        name = entry.step_name
        metrics = self.trainer.callback_metrics
        if phase == "train":
            metrics[entry.name] = metrics[name] = value
            if self._pending is not None:
                self._pending[name] = value  # recorded after the step (see after_train_iter)
            else:
                self.trainer.runner.message_hub.update(f"train/{name}", value)
        if prog_bar:
            self.trainer.progress_bar_metrics[name] = value
        if entry.name not in self._unlogged:
            self.trainer.logged_metrics[name] = value

    def _size(self, entry: LoggedValue, value: Any, batch_size: int | None) -> int:
        if batch_size is not None:
            return int(batch_size)
        if entry.reduce != "mean" or not self._in_batch or is_metric(value):
            return 1
        if self._batch_size is None:  # Lightning's inference: the first tensor's length
            from lightning.pytorch.utilities.data import extract_batch_size  # noqa: PLC0415
            self._batch_size = int(extract_batch_size(self._batch))
        return self._batch_size

    def _publish(self, phase: str, entries: list[LoggedValue] | None = None) -> None:
        """Report epoch values: training ones into the message hub, evaluation ones into
        the metrics of the pass (reduced over ranks: every rank calls this at the same point)."""
        whole_epoch = entries is None
        if entries is None:
            entries = [v for v in self._values[phase].values() if v.on_epoch]
        results = epoch_results(entries, sync=phase != "train")
        if not results:
            return
        hub = self.trainer.runner.message_hub
        if phase == "train":
            for value, result in results:
                hub.remove(f"train/{value.epoch_name}")  # one value an epoch: never averaged
                hub.update(f"train/{value.epoch_name}", result)
            if whole_epoch and self.trainer.runner.by_epoch:
                self._held = results  # the trainer's metrics get them as the epoch ends
            else:
                self._to_trainer(results)
            return
        self._to_trainer(results)
        tensors = [result.detach().double().reshape(()) for _, result in results]
        try:
            floats = torch.stack(tensors).tolist()  # one read-back per evaluation
        except RuntimeError:  # on different devices
            floats = [float(t.item()) for t in tensors]
        metrics = self._metrics if self._metrics is not None else {}
        for (value, _), number in zip(results, floats):
            metrics[value.epoch_name] = number
            hub.update(f"{phase}/{value.epoch_name}", number)
            self.trainer.module_metrics.add(value.epoch_name)

    def _to_trainer(self, results: list[tuple[LoggedValue, torch.Tensor]]) -> None:
        trainer = self.trainer
        for value, result in results:
            trainer.callback_metrics[value.name] = trainer.callback_metrics[value.epoch_name] = result
            if value.name in self._prog_bar:
                trainer.progress_bar_metrics[value.epoch_name] = result
            if value.name not in self._unlogged:
                trainer.logged_metrics[value.epoch_name] = result

    def release_epoch_values(self) -> None:
        """The training epoch ends (its ``on_train_epoch_end`` is due): its ``on_epoch``
        values reach ``callback_metrics`` / ``logged_metrics``, as in Lightning (until
        then those hold the step values)."""
        held, self._held = self._held, []
        self._to_trainer(held)

    def _reset(self, phase: str) -> None:
        hub = self.trainer.runner.message_hub
        for value in self._values[phase].values():
            value.reset()
            if phase == "train" and value.on_epoch:  # last epoch's value is not this one's
                hub.remove(f"train/{value.epoch_name}")

    def _start_batch(self, data_batch: Any) -> None:
        self._batch, self._batch_size, self._in_batch = data_batch, None, True

    # -- the run's stages ------------------------------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        self.bind()
        self._phases = ["train"]
        self._pass_done = False

    def before_train_epoch(self, runner: Runner) -> None:
        self.release_epoch_values()  # where no on_train_epoch_end released them
        self._reset("train")
        self._pass_done = False
        self._in_batch = False

    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        if self._pass_done:  # an iteration-based run starts its next pass over the data
            self._reset("train")
            self._pass_done = False
        self._start_batch(data_batch)
        self._pending = {}

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: Any = None) -> None:
        pending, self._pending = self._pending, None
        returned = outputs if isinstance(outputs, Mapping) else {}
        hub = runner.message_hub
        for name, value in (pending or {}).items():
            if name not in returned:  # a returned "loss" is in the hub already
                hub.update(f"train/{name}", value)
        try:
            length = len(runner.train_dataloader)
        except TypeError:  # a loader without a length: the epoch's end publishes
            return
        if runner.state.batch >= length:
            self._publish("train")
            self._pass_done = True

    def after_train_epoch(self, runner: Runner) -> None:
        self._in_batch = False
        self._publish("train")  # again, with what was logged after the last step

    def after_train(self, runner: Runner) -> None:
        self.release_epoch_values()  # where no on_train_epoch_end released them
        self._in_batch = False  # the phase ends after the last methods (close_training)

    def before_val(self, runner: Runner) -> None:
        _evaluate_like_lightning(runner, "val")
        self._enter("val")

    def before_val_epoch(self, runner: Runner) -> None:
        self._reset("val")

    def before_val_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self._start_batch(data_batch)

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        # before the callbacks' and the module's on_validation_epoch_end (LightningCalls), so
        # they see the epoch's values; what they log is published into ``metrics`` at once
        self._report("val", metrics)

    def after_val(self, runner: Runner) -> None:
        self._leave()

    def before_test(self, runner: Runner) -> None:
        _evaluate_like_lightning(runner, "test")
        self._enter("test")

    def before_test_epoch(self, runner: Runner) -> None:
        self._reset("test")

    def before_test_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self._start_batch(data_batch)

    def after_test_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._report("test", metrics)

    def after_test(self, runner: Runner) -> None:
        self._leave()

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        self.unbind()
        self._phases, self._in_batch, self._pending = [], False, None

    def _enter(self, phase: str) -> None:
        self.bind()
        self._phases.append(phase)
        self._in_batch, self._metrics = False, None

    def _leave(self) -> None:
        if self._phases:
            self._phases.pop()
        self._in_batch, self._metrics = False, None

    def _report(self, phase: str, metrics: dict[str, float] | None) -> None:
        self._in_batch = False
        self._metrics = metrics if metrics is not None else {}
        self._publish(phase)


def _evaluate_like_lightning(runner: Runner, mode: str) -> None:
    """Lightning's precision plugin autocasts validation and test too: with a mixed precision
    (``"16-mixed"`` / ``"bf16-mixed"``, an ``AmpOptimWrapper``) the run's ``val_loop`` /
    ``test_loop`` run under its autocast, unless the run configures that loop itself
    (``val_loop={"fp16": False}`` keeps full precision)."""
    loop = runner.val_loop if mode == "val" else runner.test_loop
    if loop is None or loop.fp16 or runner.cfg.get(f"{mode}_loop") is not None:
        return
    if lightning_precision(runner) in ("16-mixed", "bf16-mixed"):
        loop.fp16 = True


def attach_module(runner: Runner) -> contextlib.AbstractContextManager[None]:
    """Register the hook that binds ``runner.model`` (a LightningModule) to the run, with the
    run's trainer facade; returns the context in which ``configure_optimizers()`` is read."""
    trainer = LightningTrainer.of(runner, module=runner.model)
    hook = LightningModuleHook(runner.model, trainer)
    runner.register_hook(hook)
    trainer.log_hook = hook
    trainer.calls.join(hook, module=True)
    return _configured(hook)


@contextlib.contextmanager
def _configured(hook: LightningModuleHook) -> Iterator[None]:
    """Bound, after Lightning's ``configure_model()`` (which precedes ``configure_optimizers()``)."""
    with hook.attached():
        hook.calls.configure()
        yield
