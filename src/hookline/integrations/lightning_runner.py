"""Lightning callbacks in a hookline Runner: ``LightningCallbackHook`` runs one at the matching stages.

``Runner(hooks=[lightning.pytorch.callbacks.EarlyStopping("val_loss")])``
wraps the callback automatically (the ``lightning`` adapter). It is called
as ``Trainer.fit`` calls it, with the run's
:class:`~hookline.integrations.lightning_trainer.LightningTrainer` as
``trainer`` and a ``LightningModule`` around the model as ``pl_module``:

==========================================  ==========================================
Lightning method                            called at
==========================================  ==========================================
setup(stage) / teardown(stage)              first stage of ``train()`` ("fit"), ``val()``
                                            ("validate"), ``test()``; ``after_run``
on_fit_start / on_train_start               ``before_train``
on_train_epoch_start                        ``before_train_epoch``
on_train_batch_start(batch, batch_idx)      ``before_train_iter``
on_train_batch_end(outputs, batch, idx)     ``after_train_iter``
on_train_epoch_end                          after the epoch *and its validation*
on_validation_start / _epoch_start          ``before_val`` / ``before_val_epoch``
on_validation_batch_start / _end            ``before_val_iter`` / ``after_val_iter``
on_validation_epoch_end / on_validation_end ``after_val_epoch`` / ``after_val``
on_test_*                                   the test stages, likewise
on_train_end / on_fit_end                   ``after_train``
on_save_checkpoint / on_load_checkpoint     ``before_save_checkpoint`` /
                                            ``after_load_checkpoint``
on_exception                                ``on_exception`` (a hook's error unwrapped
                                            from its ``HookError``)
on_before_backward ... on_before_zero_grad  around the optimizer wrapper's backward,
                                            step and zero_grad
state_dict / load_state_dict                the hook's state in hookline checkpoints
==========================================  ==========================================

``on_sanity_check_*`` and ``on_predict_*`` are never called, as in a
``Trainer.fit`` with ``num_sanity_val_steps=0``: a hookline run has no sanity
check and no predict loop. Lightning callbacks that need Lightning's own
checkpointing, progress bars, tuner or weight averaging are refused with a
``ConfigError`` naming the hookline equivalent (:data:`REFUSED`).

Example::

    >>> sorted(REFUSED)[:3]
    ['BaseFinetuning', 'BasePredictionWriter', 'BatchSizeFinder']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError, HookError
from hookline.engine.data import loader_length
from hookline.engine.hook import STAGES, Hook

from ._detect import class_named
from .lightning_trainer import OPTIMIZER_METHODS, LightningTrainer

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["REFUSED", "LightningCallbackHook", "lightning_methods"]

_MODULES = ("lightning.pytorch", "pytorch_lightning")

#: Lightning's callbacks a hookline run cannot host, and what to use instead
REFUSED = {
    "ModelCheckpoint": "it saves Lightning checkpoints through the Trainer's checkpoint "
                       "connector; use hookline's CheckpointHook ({'type': 'CheckpointHook', "
                       "'save_best': 'val_loss', 'rule': 'less'})",
    "OnExceptionCheckpoint": "use hookline's CheckpointHook; a hookline run also saves a "
                             "checkpoint by itself when SIGTERM or Ctrl-C stops it",
    "ProgressBar": "it draws from the Trainer's progress tracking; use hookline's ProgressBarHook",
    "StochasticWeightAveraging": "it rebuilds the Trainer's optimizers and schedulers; use "
                                 "hookline's EMAHook",
    "WeightAveraging": "it swaps weights through Lightning's strategy; use hookline's EMAHook",
    "BatchSizeFinder": "it restarts Trainer.fit (Lightning's tuner); run it in a Lightning "
                       "Trainer and give the batch size it finds to the hookline Runner",
    "LearningRateFinder": "it restarts Trainer.fit (Lightning's tuner); run it in a Lightning "
                          "Trainer and give the learning rate it finds to the hookline Runner",
    "BaseFinetuning": "it freezes modules through the Trainer's optimizer setup; freeze them in a "
                      "hookline hook's before_train_epoch (param.requires_grad_(False))",
    "ModelSummary": "use hookline.inspect's model summary (the `hookline inspect` command)",
    "DeviceStatsMonitor": "it reads the Trainer's accelerator; use hookline's ProfilerHook",
    "ThroughputMonitor": "it reads Lightning's precision plugin; use hookline's IterTimerHook "
                         "(time per iteration in the log)",
    "ModelPruning": "it prunes through Lightning's module hooks; call torch.nn.utils.prune in a "
                    "hookline hook's before_train_epoch",
    "SpikeDetection": "use hookline's CheckInvalidLossHook",
    "BasePredictionWriter": "a hookline Runner has no predict loop",
}

# Lightning method -> the stages it needs
_STAGES: dict[str, tuple[str, ...]] = {
    "setup": ("before_train", "before_val", "before_test", "after_run"),
    "teardown": ("before_train", "before_val", "before_test", "after_run"),
    "on_fit_start": ("before_train",),
    "on_fit_end": ("after_train",),
    "on_train_start": ("before_train",),
    "on_train_end": ("after_train",),
    "on_train_epoch_start": ("before_train_epoch",),
    "on_train_epoch_end": ("before_train_epoch", "after_train_epoch", "after_val", "after_train"),
    "on_train_batch_start": ("before_train_iter",),
    "on_train_batch_end": ("after_train_iter",),
    "on_validation_start": ("before_val",),
    "on_validation_epoch_start": ("before_val_epoch",),
    "on_validation_batch_start": ("before_val_iter",),
    "on_validation_batch_end": ("after_val_iter",),
    "on_validation_epoch_end": ("after_val_epoch",),
    "on_validation_end": ("after_val",),
    "on_test_start": ("before_test",),
    "on_test_epoch_start": ("before_test_epoch",),
    "on_test_batch_start": ("before_test_iter",),
    "on_test_batch_end": ("after_test_iter",),
    "on_test_epoch_end": ("after_test_epoch",),
    "on_test_end": ("after_test",),
    "on_save_checkpoint": ("before_save_checkpoint",),
    "on_load_checkpoint": ("after_load_checkpoint",),
    "on_exception": ("on_exception",),
    **{name: () for name in OPTIMIZER_METHODS},  # fired by the trainer facade's wrapper patch
}


def _base(callback: Any) -> type:
    return next(c for c in type(callback).__mro__
                if c.__name__ == "Callback" and c.__module__.startswith(_MODULES))


def lightning_methods(callback: Any) -> frozenset[str]:
    """The Lightning methods ``callback`` overrides (its class's, or set on the instance as
    ``LambdaCallback`` does)."""
    base = _base(callback)
    own = vars(callback)
    return frozenset(name for name in _STAGES if name in own or
                     getattr(type(callback), name, None) is not getattr(base, name, None))


def check_lightning_callback(callback: Any) -> None:
    """A :class:`ConfigError` naming the hookline equivalent for callbacks a run cannot host."""
    for name, why in REFUSED.items():
        if class_named(callback, name, _MODULES):
            raise ConfigError(f"Lightning's {type(callback).__name__} cannot run in a hookline "
                              f"Runner: {why}")


class LightningCallbackHook(Hook):
    """Runs one Lightning callback at the Runner's stages (see the module docstring)."""

    priority = "NORMAL"
    callback: Any

    def __init__(self, callback: Any, runner: Runner) -> None:
        check_lightning_callback(callback)
        for hook in runner.hooks.hooks:
            if isinstance(hook, LightningCallbackHook) and hook.callback is callback:
                raise ConfigError(f"{type(callback).__name__} is already registered with this "
                                  "Runner")
        self.callback = callback
        self.methods = lightning_methods(callback)
        self.trainer = LightningTrainer.of(runner)
        self.trainer.callbacks.append(callback)
        if self.methods & set(OPTIMIZER_METHODS):
            self.trainer.optimizer_listeners.append(self)
        self._stages = set().union(*(_STAGES[m] for m in self.methods))
        self._stage_name: str | None = None  # the setup() stage of the current run
        self._epoch_open = False  # a training epoch started whose on_train_epoch_end is due
        self._epoch_after_val = False  # ... and it waits for the epoch's validation

    @property
    def state_key(self) -> str:
        return f"lightning:{self.callback.state_key}"

    def triggered_stages(self) -> list[str]:
        return [stage for stage in STAGES if stage in self._stages]

    def __repr__(self) -> str:
        return f"LightningCallbackHook({type(self.callback).__name__})"

    def _call(self, name: str, *args: Any) -> None:
        if name in self.methods:
            getattr(self.callback, name)(self.trainer, self.trainer.lightning_module, *args)

    def _setup(self, stage: str) -> None:
        if self._stage_name is None:
            self._stage_name = stage
            self._call("setup", stage)

    # -- state in hookline checkpoints --------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = self.callback.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state:
            self.callback.load_state_dict(state)

    # -- training -------------------------------------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        self._setup("fit")
        self._call("on_fit_start")
        self._call("on_train_start")

    def before_train_epoch(self, runner: Runner) -> None:
        self._epoch_open, self._epoch_after_val = True, False
        self._call("on_train_epoch_start")

    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self._call("on_train_batch_start", data_batch, _in_epoch(runner, batch_idx))

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: Any = None) -> None:
        self._call("on_train_batch_end", outputs, data_batch, _in_epoch(runner, batch_idx))

    def after_train_epoch(self, runner: Runner) -> None:
        loop = runner.train_loop
        if runner.by_epoch and loop is not None and loop.val_due_after_epoch(runner.epoch + 1):
            self._epoch_after_val = True  # Lightning validates before on_train_epoch_end
        else:
            self._end_epoch()

    def _end_epoch(self) -> None:
        if self._epoch_open:
            self._epoch_open = self._epoch_after_val = False
            self._call("on_train_epoch_end")

    def after_train(self, runner: Runner) -> None:
        self._end_epoch()  # an epoch cut by should_stop still ends, as in Lightning
        self._call("on_train_end")
        self._call("on_fit_end")

    # -- validation and test -----------------------------------------------------------------------
    def before_val(self, runner: Runner) -> None:
        self._setup("validate")
        self._call("on_validation_start")

    def before_val_epoch(self, runner: Runner) -> None:
        self._call("on_validation_epoch_start")

    def before_val_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self._call("on_validation_batch_start", data_batch, batch_idx)

    def after_val_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                       outputs: Any = None) -> None:
        self._call("on_validation_batch_end", outputs, data_batch, batch_idx)

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._call("on_validation_epoch_end")

    def after_val(self, runner: Runner) -> None:
        self._call("on_validation_end")
        if self._epoch_after_val:
            self._end_epoch()

    def before_test(self, runner: Runner) -> None:
        self._setup("test")
        self._call("on_test_start")

    def before_test_epoch(self, runner: Runner) -> None:
        self._call("on_test_epoch_start")

    def before_test_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self._call("on_test_batch_start", data_batch, batch_idx)

    def after_test_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                        outputs: Any = None) -> None:
        self._call("on_test_batch_end", outputs, data_batch, batch_idx)

    def after_test_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._call("on_test_epoch_end")

    def after_test(self, runner: Runner) -> None:
        self._call("on_test_end")

    # -- the run around them ---------------------------------------------------------------------------
    def after_run(self, runner: Runner) -> None:
        if self._stage_name is not None:
            stage, self._stage_name = self._stage_name, None  # the next run sets up again
            self._call("teardown", stage)

    def before_save_checkpoint(self, runner: Runner, checkpoint: dict[str, Any]) -> None:
        self._call("on_save_checkpoint", checkpoint)

    def after_load_checkpoint(self, runner: Runner, checkpoint: dict[str, Any]) -> None:
        self._call("on_load_checkpoint", checkpoint)

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        # Lightning passes the exception raised; hookline wraps one raised in a hook in HookError
        if isinstance(exception, HookError) and exception.__cause__ is not None:
            exception = exception.__cause__
        self._call("on_exception", exception)


def _in_epoch(runner: Runner, batch_idx: int) -> int:
    """Lightning's ``batch_idx``: the batch within the epoch (a ``max_iters`` run counts globally)."""
    if runner.by_epoch:
        return batch_idx
    length = loader_length(runner.train_dataloader)
    if length is None and runner.train_loop is not None:  # no length: known once a pass ends
        length = runner.train_loop.epoch_length
    return batch_idx % length if length else batch_idx
