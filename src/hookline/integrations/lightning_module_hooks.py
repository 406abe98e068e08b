"""A ``LightningModule``'s own hook methods (``on_validation_epoch_end`` ...) called in a hookline
run where ``Trainer.fit`` calls them.

:class:`ModuleHooks` is what :class:`~hookline.integrations.lightning_module.LightningModuleHook`
uses: it calls only the methods the module's class overrides (or the module
has as its own attributes); a module that overrides none costs no call at any
stage. The Runner stages the methods run at:

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
on_before_optimizer_step(optimizer)         its ``before_step`` (before clipping)
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

    >>> HOOK_METHODS["on_validation_batch_end"]  # a stage the hook adds only for it
    ('after_val_iter',)
    >>> sorted(REFUSED)
    ['on_after_batch_transfer', 'on_before_batch_transfer', 'transfer_batch_to_device']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError, HookHandle
from hookline.engine import distributed
from hookline.engine.data import loader_length

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["HOOK_METHODS", "REFUSED", "ModuleHooks", "batch_in_epoch", "overridden_hooks"]

_MODULES = ("lightning.pytorch", "pytorch_lightning")

#: the module methods a run calls -> the Runner stages that call them (beyond those
#: ``LightningModuleHook`` always has)
HOOK_METHODS: dict[str, tuple[str, ...]] = {
    "configure_model": (), "prepare_data": (), "setup": (), "teardown": (),
    "on_fit_start": (), "on_fit_end": (), "on_train_start": (), "on_train_end": (),
    "on_train_epoch_start": (), "on_train_epoch_end": (),
    "on_train_batch_start": (), "on_train_batch_end": (),
    "on_validation_start": (), "on_validation_end": (),
    "on_validation_epoch_start": (), "on_validation_epoch_end": (),
    "on_validation_batch_start": (), "on_validation_batch_end": ("after_val_iter",),
    "on_test_start": (), "on_test_end": (), "on_test_epoch_start": (), "on_test_epoch_end": (),
    "on_test_batch_start": (), "on_test_batch_end": ("after_test_iter",),
    "on_before_backward": (), "on_after_backward": (), "on_before_optimizer_step": (),
    "on_before_zero_grad": (),
    "on_save_checkpoint": ("before_save_checkpoint",),
    "on_load_checkpoint": ("after_load_checkpoint",),
}

#: the optimizer wrapper event -> the module method it calls, and whether it passes the optimizer
_EVENTS = {"before_backward": ("on_before_backward", False),
           "after_backward": ("on_after_backward", False),
           "before_step": ("on_before_optimizer_step", True),
           "before_zero_grad": ("on_before_zero_grad", True)}

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
    """A :class:`ConfigError` for a module overriding a hook a hookline run cannot call."""
    for name in sorted(overridden_hooks(module, REFUSED)):
        raise ConfigError(f"{type(module).__name__}.{name} cannot run in a hookline Runner: "
                          f"{REFUSED[name]}; do that work in training_step / validation_step, "
                          "or in the DataLoader's collate_fn, and remove the override")


class ModuleHooks:
    """Calls the hook methods ``module`` overrides at the moments of a run (see the module
    docstring); :attr:`stages`: the extra Runner stages they need."""

    def __init__(self, module: Any) -> None:
        check_module_hooks(module)
        self.module = module
        self.methods = overridden_hooks(module)
        self.stages = frozenset(s for m in self.methods for s in HOOK_METHODS[m])
        self._events = [(event, name, with_optimizer) for event, (name, with_optimizer)
                        in _EVENTS.items() if name in self.methods]
        self._handles: list[HookHandle] = []
        self._stage_name: str | None = None  # the setup() stage of the current run
        self._epoch_open = False  # a training epoch started whose on_train_epoch_end is due
        self._epoch_after_val = False  # ... and it waits for the epoch's validation
        self._warned_skip = False

    def __repr__(self) -> str:
        return f"ModuleHooks({type(self.module).__name__}: {', '.join(sorted(self.methods))})"

    def call(self, name: str, *args: Any) -> Any:
        """``module.<name>(*args)`` when the module overrides it, else nothing."""
        if name in self.methods:
            return getattr(self.module, name)(*args)
        return None

    # -- the run -----------------------------------------------------------------------------
    def configure(self) -> None:
        """Before ``configure_optimizers()``: Lightning's ``configure_model()``."""
        self.call("configure_model")

    def set_up(self, runner: Runner, stage: str) -> None:
        """``prepare_data()`` (rank 0) and ``setup(stage)`` once per run."""
        if self._stage_name is not None:
            return
        self._stage_name = stage
        if "prepare_data" in self.methods:
            if runner.rank == 0:
                self.module.prepare_data()
            distributed.barrier()
        self.call("setup", stage)

    def tear_down(self) -> None:
        if self._stage_name is not None:
            stage, self._stage_name = self._stage_name, None  # the next run sets up again
            self.call("teardown", stage)

    # -- training ----------------------------------------------------------------------------
    def start_training(self, runner: Runner) -> None:
        self.set_up(runner, "fit")
        self.call("on_fit_start")
        self.call("on_train_start")
        self.listen(runner.optim_wrapper)

    def start_epoch(self) -> None:
        self._epoch_open, self._epoch_after_val = True, False
        self.call("on_train_epoch_start")

    def start_batch(self, runner: Runner, batch: Any, batch_idx: int) -> None:
        if self.call("on_train_batch_start", batch, batch_idx) == -1 and not self._warned_skip:
            self._warned_skip = True
            runner.logger.warning("%s.on_train_batch_start returned -1 (skip the rest of the "
                                  "epoch): a hookline run does not skip batches, the epoch goes "
                                  "on", type(self.module).__name__)

    def end_training_pass(self, runner: Runner) -> None:
        """``after_train_epoch``: ``on_train_epoch_end`` now, or after the validation that
        follows the epoch (Lightning validates first)."""
        loop = runner.train_loop
        if runner.by_epoch and loop is not None and loop.val_due_after_epoch(runner.epoch + 1):
            self._epoch_after_val = True
        else:
            self.end_epoch()

    def end_epoch(self) -> None:
        if self._epoch_open:
            self._epoch_open = self._epoch_after_val = False
            self.call("on_train_epoch_end")

    def end_validation(self) -> None:
        """``after_val``: ``on_validation_end``, then a training epoch's end that waited."""
        self.call("on_validation_end")
        if self._epoch_after_val:
            self.end_epoch()

    def end_training(self) -> None:
        self.end_epoch()  # an epoch cut by should_stop still ends, as in Lightning
        self.call("on_train_end")
        self.call("on_fit_end")
        self.unlisten()

    # -- the optimizer wrapper's events --------------------------------------------------------
    def listen(self, wrapper: Any) -> None:
        """Register the backward / optimizer methods on ``wrapper``'s events (each wrapper
        of an ``OptimWrapperDict``)."""
        if not self._events or wrapper is None or self._handles:
            return
        for inner in (wrapper.values() if hasattr(wrapper, "values") else [wrapper]):
            for event, name, with_optimizer in self._events:
                point = getattr(inner, event, None)
                if point is None:
                    continue
                method = getattr(self.module, name)
                if with_optimizer:
                    self._handles.append(point.register(_bind(method, inner.optimizer)))
                else:
                    self._handles.append(point.register(method))

    def unlisten(self) -> None:
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()

    def abort(self) -> None:
        """The run failed: no teardown (as in Lightning), the next run starts over."""
        self.unlisten()
        self._stage_name, self._epoch_open, self._epoch_after_val = None, False, False


def batch_in_epoch(runner: Runner, batch_idx: int) -> int:
    """Lightning's ``batch_idx``: the batch within the epoch (a ``max_iters`` run counts
    iterations over the whole run)."""
    if runner.by_epoch:
        return batch_idx
    length = loader_length(runner.train_dataloader)
    if length is None and runner.train_loop is not None:  # no length: known once a pass ends
        length = runner.train_loop.epoch_length
    return batch_idx % length if length else batch_idx


def _bind(method: Any, optimizer: Any) -> Any:
    def call() -> None:
        method(optimizer)
    call.__qualname__ = getattr(method, "__qualname__", "hook")  # errors name the method
    call.__module__ = getattr(method, "__module__", __name__)
    return call
