"""Lightning callbacks in a hookline Runner: ``LightningCallbackHook`` holds one, the run's
``LightningCalls`` calls it at the matching stages.

``Runner(hooks=[lightning.pytorch.callbacks.EarlyStopping("val_loss")])``
wraps the callback automatically (the ``lightning`` adapter). It is called
as ``Trainer.fit`` calls it, with the run's
:class:`~hookline.integrations.lightning_trainer.LightningTrainer` as
``trainer`` and a ``LightningModule`` around the model as ``pl_module``:

==========================================  ==========================================
Lightning method                            called at
==========================================  ==========================================
setup(stage) / teardown(stage)              first stage of ``train()`` ("fit"), ``val()``
                                            ("validate"), ``test()``, or the
                                            ``after_load_checkpoint`` of the checkpoint
                                            the run resumes (Lightning sets up, then
                                            restores); ``after_run``
on_fit_start / on_train_start               ``before_train``
on_train_epoch_start                        ``before_train_epoch`` (not for an epoch
                                            resumed mid-way, as in Lightning)
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
                                            from its ``HookError``; a ``KeyboardInterrupt``
                                            for a Ctrl-C stop)
on_before_backward ... on_before_zero_grad  the optimizer wrapper's ``before_backward``,
                                            ``after_backward``, ``before_step`` (AMP:
                                            unscaled), ``before_zero_grad`` events
state_dict / load_state_dict                the hook's state in hookline checkpoints
==========================================  ==========================================

The callback's ``log`` / ``log_dict`` are the run's ``pl_module.log`` / ``log_dict``
(:class:`ModuleMethod`), as Lightning binds them; with a plain torch model, a
``LightningModuleHook`` records them as a ``LightningModule``'s ``self.log``.

Each method is called on every callback (in registration order; a ``priority``
given to ``register_hook`` orders the Lightning callbacks among themselves),
then on the ``LightningModule``, as in Lightning (:mod:`.lightning_calls`):
``on_train_epoch_end`` reaches ``EarlyStopping`` and ``Checkpoint`` subclasses
(Lightning's "monitoring" callbacks) after the module, ``on_load_checkpoint``
the module first.
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

import inspect
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError
from hookline.engine.hook import Hook

from ._detect import class_named
from .lightning_calls import METHOD_STAGES
from .lightning_module import LightningModuleHook
from .lightning_trainer import LightningTrainer

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["CALLBACK_METHODS", "REFUSED", "LightningCallbackHook", "lightning_methods"]

_MODULES = ("lightning.pytorch", "pytorch_lightning")

#: Lightning's callbacks a hookline run cannot host, and what to use instead
REFUSED = {
    "ModelCheckpoint": "it saves Lightning checkpoints through the Trainer's checkpoint "
                       "connector; use hookline's CheckpointHook ({'type': 'CheckpointHook', "
                       "'save_best': 'val_loss', 'rule': 'less'}: it keeps the one best "
                       "checkpoint, and the last max_keep_ckpts periodic ones; there is no "
                       "save_top_k)",
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

#: the Lightning methods of a callback a run calls
CALLBACK_METHODS = tuple(name for name in METHOD_STAGES
                         if name not in ("configure_model", "prepare_data"))


def _base(callback: Any) -> type:
    return next(c for c in type(callback).__mro__
                if c.__name__ == "Callback" and c.__module__.startswith(_MODULES))


def lightning_methods(callback: Any) -> frozenset[str]:
    """The Lightning methods ``callback`` overrides (its class's, or set on the instance as
    ``LambdaCallback`` does)."""
    base = _base(callback)
    own = vars(callback)
    return frozenset(name for name in CALLBACK_METHODS if name in own or
                     getattr(type(callback), name, None) is not getattr(base, name, None))


def check_lightning_callback(callback: Any) -> None:
    """A :class:`ConfigError` naming the hookline equivalent for callbacks a run cannot host,
    or naming Lightning's signature for a method that does not take what Lightning 2 passes
    (PL 1.x's ``dataloader_idx`` of ``on_train_batch_end``, ``outputs`` of
    ``on_train_epoch_end``): at registration, not a TypeError after the first batch."""
    for name, why in REFUSED.items():
        if class_named(callback, name, _MODULES):
            raise ConfigError(f"Lightning's {type(callback).__name__} cannot run in a hookline "
                              f"Runner: {why}")
    base = _base(callback)
    for name in lightning_methods(callback):
        passed = _passed(getattr(base, name, None))
        try:
            signature = inspect.signature(getattr(callback, name))
        except (TypeError, ValueError):  # no signature to read: called as Lightning calls it
            continue
        if passed is not None and not _binds(signature, passed):
            raise ConfigError(
                f"{type(callback).__name__}.{name}{signature} does not take what Lightning "
                f"passes: Lightning 2 calls {name}({', '.join(passed)}); write def {name}(self, "
                f"{', '.join(passed)})")


def _passed(method: Any) -> tuple[str, ...] | None:
    """The arguments Lightning passes ``method`` (the base class's), positionally."""
    try:
        parameters = list(inspect.signature(method).parameters.values())[1:]  # after self
    except (TypeError, ValueError):
        return None
    return tuple(p.name for p in parameters
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _binds(signature: inspect.Signature, passed: tuple[str, ...]) -> bool:
    try:
        signature.bind(*passed)
    except TypeError:
        return False
    return True


class ModuleMethod:
    """``callback.log`` / ``callback.log_dict``: the run's ``pl_module.log`` / ``log_dict``,
    looked up at each call (Lightning binds ``callback.log = lightning_module.log``)."""

    def __init__(self, trainer: LightningTrainer, name: str) -> None:
        self.trainer = trainer
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.trainer.lightning_module, self.name)(*args, **kwargs)

    def __deepcopy__(self, memo: dict[int, Any]) -> ModuleMethod:
        return self  # a copy of the callback logs into the same run

    def __repr__(self) -> str:
        return f"<pl_module.{self.name} of the hookline run>"


class LightningCallbackHook(Hook):
    """One Lightning callback of a Runner: its state in checkpoints, and its methods, which the
    run's :class:`~.lightning_calls.LightningCalls` calls (see the module docstring)."""

    callback: Any

    def __init__(self, callback: Any, runner: Runner) -> None:
        check_lightning_callback(callback)
        for hook in runner.hooks.hooks:
            if isinstance(hook, LightningCallbackHook) and hook.callback is callback:
                raise ConfigError(f"{type(callback).__name__} is already registered with this "
                                  "Runner")
        self.callback = callback
        #: Lightning's "monitoring" callbacks end a training epoch after the module
        self.monitoring = any(class_named(callback, name, _MODULES)
                              for name in ("EarlyStopping", "Checkpoint"))
        self.methods = lightning_methods(callback)
        self.trainer = LightningTrainer.of(runner)
        if self.trainer.log_hook is None:  # a plain model: pl_module.log records as a module's
            self.trainer.log_hook = LightningModuleHook(self.trainer.lightning_module,
                                                        self.trainer)
            runner.register_hook(self.trainer.log_hook)
        self.trainer.callbacks.append(callback)
        self.trainer.calls.join(self)
        for name in ("log", "log_dict"):  # Lightning: callback.log = lightning_module.log
            setattr(callback, name, ModuleMethod(self.trainer, name))

    @property
    def state_key(self) -> str:
        return f"lightning:{self.callback.state_key}"

    def triggered_stages(self) -> list[str]:
        return []  # LightningCalls calls the callback

    def __repr__(self) -> str:
        return f"LightningCallbackHook({type(self.callback).__name__})"

    def call(self, name: str, *args: Any) -> None:
        """``callback.<name>(trainer, pl_module, *args)``."""
        getattr(self.callback, name)(self.trainer, self.trainer.lightning_module, *args)

    # -- state in hookline checkpoints --------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = self.callback.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state:
            self.callback.load_state_dict(state)
