"""``trainer`` and ``pl_module`` of Lightning callbacks in a hookline run.

:class:`LightningTrainer` is one hook per Runner (registered with the first
Lightning callback, priority ``HIGHEST``) that is also the ``trainer`` every
Lightning callback of the run gets. It keeps what Lightning's own callbacks
read up to date:

- ``current_epoch`` / ``global_step`` (``runner.epoch`` / the optimizer steps, counted
  as they happen and kept in checkpoints),
  ``max_epochs``, ``max_steps`` (in iteration-based runs the optimizer steps of
  ``max_iters`` batches: ``max_iters / accumulate_grad_batches``, rounded up; else
  -1), ``estimated_stepping_batches``, ``num_training_batches``
  (``float("inf")`` for a loader without a length, as in Lightning);
- ``should_stop`` (read/write: ``runner.stop_training``); ``is_last_batch``
  (True from the start of an epoch's last training batch until the next
  epoch starts, as in Lightning; always False for a loader without a length);
- ``callback_metrics``: the training step's scalar outputs under their names
  (``loss`` ...), validation metrics as ``val_<name>``, test metrics as
  ``test_<name>`` (device tensors, no sync), plus what ``pl_module.log``
  and the loggers received; ``logged_metrics``: the latter;
- ``optimizers``, ``lr_scheduler_configs`` (the Runner's schedulers),
  ``accumulate_grad_batches`` (read/write: the optimizer wrapper's
  ``accumulative_counts``, from the next epoch on);
- ``is_global_zero``, ``world_size``, ``global_rank``, ``log_dir`` /
  ``default_root_dir`` (``work_dir``), ``strategy`` (``root_device``,
  ``broadcast``, ``reduce_boolean_decision``), ``loggers`` (one logger
  writing to ``runner.visualizer``; its ``experiment`` is a ``TensorboardLoggerHook``'s
  writer), ``state.fn`` / ``state.stage``, ``interrupted`` (in ``on_exception``),
  ``training`` / ``validating`` / ``testing``, ``sanity_checking`` (False);
- ``train_dataloader``, ``val_dataloaders``, ``precision``,
  ``checkpoint_callback``, ``early_stopping_callback``, ``ckpt_path``,
  ``fit_loop.epoch_progress`` ... (:mod:`.lightning_trainer_attrs`); any other
  attribute is an ``AttributeError`` listing what the facade has.

``callback_metrics``, ``logged_metrics`` and ``progress_bar_metrics`` start
empty at every ``train()``, ``val()`` and ``test()``, as Lightning resets
them at every ``fit`` / ``validate`` / ``test``.

``pl_module`` is a ``LightningModule`` around ``runner.model`` (its
parameters, and its attributes by name); ``pl_module.log`` and
``log_dict`` write ``callback_metrics``. The callbacks' methods (and a
``LightningModule``'s own) are called by the run's
:class:`~.lightning_calls.LightningCalls` (:attr:`LightningTrainer.calls`),
registered with the trainer.

Example::

    >>> trainer = LightningTrainer()
    >>> trainer.priority, trainer.sanity_checking, trainer.state.fn
    ('HIGHEST', False, 'fit')
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import torch

from hookline.engine.configure_optimizers import scheduler_name
from hookline.engine.data import loader_length
from hookline.engine.hook import Hook
from hookline.engine.metric_names import prefixed
from hookline.engine.schedulers_per_optimizer import scheduler_pairs

from ._cut_epoch import validate_cut_epoch
from .lightning_calls import OPTIMIZER_METHODS, LightningCalls
from .lightning_support import RunLogger, State, Strategy, make_module
from .lightning_trainer_attrs import FitLoop, TrainerAttributes

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["OPTIMIZER_METHODS", "LightningTrainer"]

def stepped(wrapper: Any) -> bool:
    """Whether the optimizer stepped in the iteration that just ran (the end of an
    accumulation group; every iteration without accumulation). Reads Python counters only."""
    if wrapper is not None and hasattr(wrapper, "values"):  # OptimWrapperDict: the first
        wrapper = next(iter(wrapper.values()), None)
    should_update = getattr(wrapper, "should_update", None)
    return True if should_update is None else bool(should_update())


def _batches(loader: Any, none: int | float = math.inf) -> int | float:
    """``len(loader)``; ``float("inf")`` for a loader without a length (as Lightning counts
    an iterable dataset), ``none`` for no loader."""
    if loader is None:
        return none
    length = loader_length(loader)
    return math.inf if length is None else length


class LightningTrainer(TrainerAttributes, Hook):
    """The ``trainer`` of the Lightning callbacks of one Runner (see the module docstring)."""

    priority = "HIGHEST"
    sanity_checking = False
    fast_dev_run = False
    received_sigterm = False
    interrupted = False
    predicting = False
    num_nodes = 1
    node_rank = 0
    val_check_interval = 1.0
    progress_bar_callback = None  # LightningModule.print() asks for it: a plain print

    def __init__(self) -> None:
        self.runner: Any = None
        self.state = State()
        self.training = self.validating = self.testing = False
        self.callback_metrics: dict[str, Any] = {}
        self.logged_metrics: dict[str, Any] = {}
        self.progress_bar_metrics: dict[str, Any] = {}
        self.lightning_module: Any = None
        self.callbacks: list[Any] = []
        self.loggers: list[RunLogger] = [RunLogger(self)]
        self.fit_loop = self._logger_connector = FitLoop(self)
        self._finishing: int | None = None  # the epoch whose end (validation ...) is under way
        self._epoch_first_iter: int | None = None  # runner.iter at the open epoch's start
        self._open_epoch: int | None = None  # runner.epoch of the last epoch started
        self._cut_counted = False  # current_epoch counts the epoch should_stop cut short
        self._epoch_batches: int | float = math.inf  # training batches per epoch (pass)
        #: Lightning's: whether the training batch in progress is its epoch's last
        self.is_last_batch = False
        #: ``fit_loop.epoch_loop.batch_idx`` / ``total_batch_idx``: the training batch in
        #: progress (or last run), in its epoch and in the run; -1 before the first
        self.batch_idx = self.total_batch_idx = -1
        #: the validation / test metrics a LightningModule logged itself (``self.log``): in
        #: ``callback_metrics`` under their own names, not again as ``val_<name>``
        self.module_metrics: set[str] = set()
        #: optimizer steps done (``global_step``), counted as they happen; None until a
        #: training run starts (then derived from the position) or a checkpoint restores it
        self._steps: int | None = None
        #: the LightningModuleHook that records ``pl_module.log`` (the LightningModule's, or
        #: the one of the module around a plain model)
        self.log_hook: Any = None

    @classmethod
    def of(cls, runner: Runner, module: Any = None) -> LightningTrainer:
        """The runner's trainer facade, registered now if it has none; ``module``: the
        ``LightningModule`` it reports (default: one around ``runner.model``)."""
        for hook in runner.hooks.hooks:
            if isinstance(hook, cls):
                return hook
        trainer = cls()
        trainer.runner = runner
        trainer.strategy = Strategy(runner, trainer)
        trainer.lightning_module = module if module is not None else make_module(runner, trainer)
        runner.register_hook(trainer)
        #: calls the Lightning methods of the run's callbacks and module (registered when the
        #: first of them joins)
        trainer.calls = LightningCalls(runner, trainer)
        return trainer

    strategy: Any = None
    calls: LightningCalls

    # -- what Lightning callbacks read -----------------------------------------------------------
    @property
    def model(self) -> Any:
        return self.lightning_module

    @property
    def logger(self) -> RunLogger:
        return self.loggers[0]

    @property
    def current_epoch(self) -> int:
        """Lightning's: the epoch in progress until its validation and ``on_train_epoch_end``
        are over (``runner.epoch`` already counts it once its training batches are done)."""
        if self._finishing is not None:
            return self._finishing
        return int(self.runner.epoch)

    @property
    def global_step(self) -> int:
        """Lightning's: optimizer steps done, counted as each iteration's step is over (so
        ``on_train_batch_end`` sees it counted, as in Lightning) and kept in the run's
        checkpoints, so that it stays exact when ``accumulate_grad_batches`` changes
        (``GradientAccumulationScheduler``) and across a resume."""
        return self._derived_steps() if self._steps is None else self._steps

    def _derived_steps(self) -> int:
        """Optimizer steps done, from the run's position, as if the current accumulation had
        held from the start: per epoch ``ceil(batches / N)`` groups (they end with each
        epoch), or ``iterations // N`` in an iteration-based run."""
        done = int(self.runner.state.resume_point[2])
        counts = int(getattr(self.runner.optim_wrapper, "accumulative_counts", 1) or 1)
        if counts == 1:
            return done
        length = self.runner.train_loop.epoch_length if self.runner.train_loop else None
        if not self.runner.by_epoch or not length:
            return done // counts
        epochs, inner = divmod(done, length)
        return epochs * -(-length // counts) + inner // counts

    @property
    def max_epochs(self) -> int:
        return int(self.runner.max_epochs or -1)

    @property
    def max_steps(self) -> int:
        """Lightning's: the optimizer steps the run makes, so that ``global_step`` reaches it
        as the run ends (-1 in a ``max_epochs`` run, Lightning's default there). In an
        iteration-based run, ``max_iters`` batches in groups of ``accumulate_grad_batches``
        (the last group may be shorter): ``Trainer(max_steps=6, accumulate_grad_batches=4)``
        is ``Runner(max_iters=24, optim_wrapper={'accumulative_counts': 4})``."""
        if self.runner.by_epoch:
            return -1
        return math.ceil(int(self.runner.max_iters) / self.accumulate_grad_batches)

    @property
    def min_epochs(self) -> int:
        """0, as Lightning's is during ``fit`` when no ``min_epochs`` is given (hookline has
        no minimum: early stopping may stop after any epoch)."""
        return 0

    @property
    def should_stop(self) -> bool:
        return bool(self.runner.stop_training)

    @should_stop.setter
    def should_stop(self, value: bool) -> None:
        self.runner.stop_training = bool(value)

    @property
    def optimizers(self) -> list[torch.optim.Optimizer]:
        wrapper = self.runner.optim_wrapper
        if wrapper is None:
            return []
        if hasattr(wrapper, "values"):  # OptimWrapperDict
            return [w.optimizer for w in wrapper.values()]
        return [wrapper.optimizer]

    @property
    def lr_scheduler_configs(self) -> list[Any]:
        """The run's schedulers as Lightning's ``LRSchedulerConfig`` s, with the ``name``
        ``configure_optimizers()`` gave (``LearningRateMonitor`` logs under it)."""
        from lightning.pytorch.utilities.types import LRSchedulerConfig  # noqa: PLC0415
        return [LRSchedulerConfig(scheduler, name=scheduler_name(scheduler),
                                  interval="epoch" if by_epoch else "step",
                                  reduce_on_plateau=isinstance(
                                      scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau))
                for scheduler, by_epoch in scheduler_pairs(self.runner.param_schedulers)]

    @property
    def accumulate_grad_batches(self) -> int:
        return int(getattr(self.runner.optim_wrapper, "accumulative_counts", 1))

    @accumulate_grad_batches.setter
    def accumulate_grad_batches(self, value: int) -> None:
        wrapper = self.runner.optim_wrapper
        for inner in (wrapper.values() if hasattr(wrapper, "values") else [wrapper]):
            inner.accumulative_counts = int(value)

    @property
    def estimated_stepping_batches(self) -> int | float:
        """Optimizer steps of the run. As in Lightning, a train dataloader without a length
        gives ``max_steps`` (-1 in a ``max_epochs`` run)."""
        accumulate = self.accumulate_grad_batches
        if self.runner.by_epoch:
            batches = self.num_training_batches
            if batches == math.inf:  # Lightning's "iterable dataset" case
                return self.max_steps
            return int(math.ceil(batches / accumulate) * self.runner.max_epochs)
        return self.max_steps

    @property
    def num_training_batches(self) -> int | float:
        """Batches per training epoch; ``float("inf")`` without a length (Lightning's)."""
        return _batches(self.runner.train_dataloader, 0)

    @property
    def num_val_batches(self) -> list[int | float]:
        loader = self.runner.val_dataloader
        return [_batches(loader)] if loader is not None else []

    @property
    def num_test_batches(self) -> list[int | float]:
        loader = self.runner.test_dataloader
        return [_batches(loader)] if loader is not None else []

    @property
    def check_val_every_n_epoch(self) -> int | None:
        return int(self.runner.val_interval or 1) if self.runner.by_epoch else None

    @property
    def log_every_n_steps(self) -> int:
        logger = self.runner.hooks.by_key().get("logger")
        return int(getattr(logger, "interval", 50))

    @property
    def is_global_zero(self) -> bool:
        return bool(self.runner.rank == 0)

    @property
    def global_rank(self) -> int:
        return int(self.runner.rank)

    local_rank = global_rank

    @property
    def world_size(self) -> int:
        return int(self.runner.world_size)

    @property
    def num_devices(self) -> int:
        return 1

    @property
    def log_dir(self) -> str:
        return str(self.runner.work_dir)

    default_root_dir = log_dir

    def save_checkpoint(self, filepath: Any, weights_only: bool = False,
                        storage_options: Any = None) -> None:
        """A hookline checkpoint of the run at ``filepath`` (``weights_only``: no optimizer)."""
        self.runner.save_checkpoint(filepath, save_optimizer=not weights_only)

    def __repr__(self) -> str:
        return "LightningTrainer()"

    # -- keeping it current ------------------------------------------------------------------------
    def _mode(self, fn: str, stage: str) -> None:
        self.state.fn, self.state.stage = fn, stage
        self.training, self.validating, self.testing = (stage == "train", stage == "validate",
                                                        stage == "test")

    def enter(self, stage: str) -> None:
        """A run's ``setup(stage)`` is due (``"fit"``, ``"validate"``, ``"test"``): the state
        Lightning has from there on."""
        self._mode(stage, {"fit": "train"}.get(stage, stage))

    @contextlib.contextmanager
    def ending_validation(self) -> Iterator[None]:
        """Still validating (``on_validation_end``, as in Lightning) though the Runner's
        validation is over; fitting again afterwards."""
        if self.state.fn != "fit":
            yield
            return
        self._mode("fit", "validate")
        try:
            yield
        finally:
            self._mode("fit", "train")

    # -- state in hookline checkpoints: the optimizer steps counted -------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {} if self._steps is None else {"global_step": self._steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        steps = state.get("global_step")
        self._steps = None if steps is None else int(steps)

    def before_run(self, runner: Runner) -> None:
        """A new ``train()`` / ``val()`` / ``test()``: the metrics start empty, as Lightning
        resets them at every ``fit`` / ``validate`` / ``test``; not interrupted."""
        self.interrupted = False
        self.callback_metrics.clear()
        self.logged_metrics.clear()
        self.progress_bar_metrics.clear()

    def after_load_checkpoint(self, runner: Runner, checkpoint: dict[str, Any]) -> None:
        self.resumed = getattr(runner, "resume_from", None) is not None  # not for load_from=

    def before_train(self, runner: Runner) -> None:
        self._mode("fit", "train")
        if self._steps is None:  # a fresh run (0), or a checkpoint without the count
            self._steps = self._derived_steps()
        self._finishing = None
        self._open_epoch, self._cut_counted = None, False
        self._epoch_batches = _batches(runner.train_dataloader)

    def before_train_epoch(self, runner: Runner) -> None:
        self._finishing = None
        self._open_epoch, self._cut_counted = int(runner.epoch), False
        self.is_last_batch = False
        self.batch_idx = -1
        self._epoch_first_iter = runner.iter  # None once the epoch has ended

    def after_train_epoch(self, runner: Runner) -> None:
        self._finishing = runner.epoch if runner.by_epoch else None
        self._epoch_first_iter = None

    def _validate_cut_epoch(self, runner: Runner) -> None:
        """``should_stop`` cut the epoch after some batches: Lightning validates it there (when
        a validation is due after it), still fitting, before its ``on_train_epoch_end``."""
        first = self._epoch_first_iter
        loop, val_loop = runner.train_loop, runner.val_loop
        if first is None or not runner.by_epoch or loop is None or val_loop is None \
                or not runner.stop_training or runner.iter == first \
                or val_loop.ran_at_iter == runner.iter \
                or not loop.val_due_after_epoch(runner.epoch + 1):
            return
        validate_cut_epoch(runner)  # with the Keras log book's, when the run has one

    @contextlib.contextmanager
    def cut_epoch_validation(self, runner: Runner) -> Iterator[None]:
        """The validation starting now is that of the epoch ``should_stop`` cut short
        (:func:`~._cut_epoch.validate_cut_epoch`, whichever bridge runs it): ``current_epoch``
        reads that epoch during it, as in Lightning, and its ``on_train_epoch_end`` follows it
        (from there on ``current_epoch`` counts it)."""
        if runner.by_epoch and self._epoch_first_iter is not None:
            self._finishing = int(runner.epoch)  # the epoch in progress, as in its validation
            calls = vars(self).get("calls")  # the run's LightningCalls
            if calls is not None:
                calls.end_epoch_after_cut_validation()
        yield

    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self.is_last_batch = batch_idx + 1 >= self._epoch_batches
        self.batch_idx, self.total_batch_idx = batch_idx, runner.iter

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: Any = None) -> None:
        if self._steps is not None and stepped(runner.optim_wrapper):
            self._steps += 1
        if isinstance(outputs, Mapping):
            for key, value in outputs.items():
                if isinstance(value, torch.Tensor) and value.numel() == 1:
                    self.callback_metrics[key] = value.detach().reshape(())

    def before_val(self, runner: Runner) -> None:
        self._mode("fit" if getattr(runner, "running", None) == "train" else "validate",
                   "validate")

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._metrics("val", metrics)

    def after_val(self, runner: Runner) -> None:
        if self.state.fn == "fit":  # LightningCalls' on_validation_end sees it validating still
            self._mode("fit", "train")

    def before_test(self, runner: Runner) -> None:
        self._mode("test", "test")

    def after_test_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._metrics("test", metrics)

    def after_train(self, runner: Runner) -> None:
        self._validate_cut_epoch(runner)  # first of the run's after_train hooks (HIGHEST)
        self._epoch_first_iter = None
        if not self._cut_counted:  # else on_train_end sees the cut epoch counted
            self._finishing = None  # still training: on_train_end ... teardown, as in Lightning

    def count_cut_epoch(self) -> None:
        """The epoch ``should_stop`` cut short has had its ``on_train_epoch_end``: from here on
        ``current_epoch`` counts it, as Lightning's does (``on_train_end`` sees it counted)."""
        epoch = self._open_epoch if self._open_epoch is not None else int(self.runner.epoch)
        self._finishing = epoch + 1  # (runner.epoch may count it already: in its validation)
        self._cut_counted = True

    def _metrics(self, prefix: str, metrics: Mapping[str, Any] | None) -> None:
        for key, value in (metrics or {}).items():
            if key not in self.module_metrics:
                self.callback_metrics[prefixed(prefix, key)] = torch.as_tensor(value)
