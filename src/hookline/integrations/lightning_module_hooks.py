"""A ``LightningModule``'s own hook methods (``on_validation_epoch_end`` ...) called in a hookline
run where ``Trainer.fit`` calls them.

:class:`ModuleHooks` is what :class:`~hookline.integrations.lightning_module.LightningModuleHook`
uses: it calls only the methods the module's class overrides (or the module
has as its own attributes); a module that overrides none costs no call at any
stage. The run's :class:`~.lightning_calls.LightningCalls` calls them after the
Lightning callbacks' methods of the same name, as ``Trainer.fit`` does
(``on_load_checkpoint``: before; ``prepare_data``: before the callbacks'
``setup``). The Runner stages the methods run at:

==========================================  ============================================
module method                               called at
==========================================  ============================================
configure_model()                           when the Runner is built, before
                                            ``configure_optimizers()``
prepare_data() (rank 0), setup(stage)       first stage of ``train()`` ("fit"), ``val()``
                                            ("validate"), ``test()`` ("test")
on_fit_start / on_train_start               ``before_train``
on_train_epoch_start                        ``before_train_epoch``
on_train_batch_start(batch, batch_idx)      ``before_train_iter``
on_before_backward(loss) /                  the optimizer wrapper's ``before_backward`` /
on_after_backward()                         ``after_backward`` events
on_before_optimizer_step(optimizer)         its ``before_step`` (before clipping,
                                            unscaled under AMP)
on_before_zero_grad(optimizer)              its ``before_zero_grad``
on_train_batch_end(outputs, batch, idx)     ``after_train_iter``
on_validation_start / _epoch_start          ``before_val`` / ``before_val_epoch``
on_validation_batch_start / _end            ``before_val_iter`` / ``after_val_iter``
on_validation_epoch_end                     ``after_val_epoch``, before what it logs is
                                            reported (so ``save_best`` sees it)
on_validation_end                           ``after_val``
on_train_epoch_end                          after the epoch *and its validation*
on_test_*                                   the test stages, likewise
on_train_end / on_fit_end                   ``after_train``
teardown(stage)                             ``after_run``
on_save_checkpoint(checkpoint)              ``before_save_checkpoint`` (keys it adds are
                                            saved)
on_load_checkpoint(checkpoint)              ``after_load_checkpoint`` (before the weights
                                            are loaded, as in Lightning)
==========================================  ============================================

Batch-transfer hooks (``on_before_batch_transfer``, ``transfer_batch_to_device``,
``on_after_batch_transfer``) change the data a step sees and are refused with a
``ConfigError`` (:data:`REFUSED`); the ``on_*_model_eval`` / ``_train`` /
``_zero_grad`` hooks are not called (the Runner's loops switch the modes) and
neither are ``on_predict_*`` (no predict loop).

Example (``overridden_hooks(module)`` lists what a module overrides)::

    >>> HOOK_METHODS["on_validation_batch_end"]  # the stage that calls it
    ('after_val_iter',)
    >>> sorted(REFUSED)
    ['on_after_batch_transfer', 'on_before_batch_transfer', 'transfer_batch_to_device']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError

from .lightning_calls import METHOD_STAGES, batch_in_epoch

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["HOOK_METHODS", "REFUSED", "ModuleHooks", "batch_in_epoch",
           "check_automatic_optimization", "overridden_hooks"]

_MODULES = ("lightning.pytorch", "pytorch_lightning")

#: the module methods a run calls -> the Runner stages that call them
HOOK_METHODS: dict[str, tuple[str, ...]] = {
    name: stages for name, stages in METHOD_STAGES.items() if name != "on_exception"}

#: module methods a hookline run cannot call, and what to do instead
REFUSED = {
    "on_before_batch_transfer": "the Runner moves batches to the device itself",
    "transfer_batch_to_device": "the Runner moves batches to the device itself",
    "on_after_batch_transfer": "the Runner moves batches to the device itself",
}


def _base(module: Any) -> type:
    return next(c for c in type(module).__mro__
                if c.__name__ == "LightningModule" and c.__module__.startswith(_MODULES))


def overridden_hooks(module: Any, names: Any = None) -> frozenset[str]:
    """The hook methods among ``names`` (default :data:`HOOK_METHODS`) that ``module``'s
    class overrides or the module holds as its own attributes."""
    base, own = _base(module), vars(module)
    return frozenset(name for name in (HOOK_METHODS if names is None else names) if name in own
                     or getattr(type(module), name, None) is not getattr(base, name, None))


def check_module_hooks(module: Any) -> None:
    """A :class:`ConfigError` for a module overriding a hook a hookline run cannot call, or
    asking for Lightning's manual optimization (:func:`check_automatic_optimization`)."""
    check_automatic_optimization(module)
    for name in sorted(overridden_hooks(module, REFUSED)):
        raise ConfigError(f"{type(module).__name__}.{name} cannot run in a hookline Runner: "
                          f"{REFUSED[name]}; do that work in training_step / validation_step, "
                          "or in the DataLoader's collate_fn, and remove the override")


def check_automatic_optimization(module: Any) -> None:
    """A :class:`ConfigError` for ``automatic_optimization = False`` (Lightning's manual
    optimization) on a module without MMEngine's ``train_step(data, optim_wrapper)``: the
    Runner backpropagates the loss ``training_step`` returns and steps the optimizer and the
    schedulers itself, so they would run twice (or ``self.manual_backward`` fail)."""
    if getattr(module, "automatic_optimization", True) or hasattr(module, "train_step"):
        return
    name = type(module).__name__
    raise ConfigError(
        f"{name}.automatic_optimization is False (Lightning's manual optimization), which a "
        "hookline Runner does not support: it runs the backward pass, the optimizer step and "
        "the scheduler steps itself after training_step. Either leave automatic_optimization "
        "True and return the loss from training_step (clipping, accumulation and AMP come "
        "from optim_wrapper={'clip_grad': ..., 'accumulative_counts': ...}), or rename "
        f"training_step to MMEngine's train_step(self, data, optim_wrapper): the Runner then "
        "runs it as the model's own update and steps no optimizer itself; optim_wrapper wraps "
        "the optimizer configure_optimizers() returns (optim_wrapper['0'], ['1'] ... for "
        "several): call optim_wrapper.update_params(loss), or loss.backward() and "
        "optim_wrapper.step() / zero_grad(), and return a dict of values to log (the Runner "
        "still steps configure_optimizers()' schedulers; self.log works as in training_step)")


class ModuleHooks:
    """Calls the hook methods ``module`` overrides (:attr:`methods`, see the module
    docstring)."""

    def __init__(self, module: Any) -> None:
        check_module_hooks(module)
        self.module = module
        self.methods = overridden_hooks(module)
        self._warned_skip = False

    def __repr__(self) -> str:
        return f"ModuleHooks({type(self.module).__name__}: {', '.join(sorted(self.methods))})"

    def call(self, name: str, *args: Any) -> Any:
        """``module.<name>(*args)`` when the module overrides it, else nothing."""
        if name in self.methods:
            return getattr(self.module, name)(*args)
        return None

    def configure(self) -> None:
        """Before ``configure_optimizers()``: Lightning's ``configure_model()``."""
        self.call("configure_model")

    def start_batch(self, runner: Runner, batch: Any, batch_idx: int) -> None:
        """``on_train_batch_start``; a -1 (skip the rest of the epoch) is warned about once."""
        if self.call("on_train_batch_start", batch, batch_idx) == -1 and not self._warned_skip:
            self._warned_skip = True
            runner.logger.warning("%s.on_train_batch_start returned -1 (skip the rest of the "
                                  "epoch): a hookline run does not skip batches, the epoch goes "
                                  "on", type(self.module).__name__)
