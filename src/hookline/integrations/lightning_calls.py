"""``LightningCalls``: one hook per Runner that calls the Lightning methods of the run's Lightning
callbacks and of its ``LightningModule`` in ``Trainer.fit``'s order.

Lightning calls each hook method on every callback, then on the module
(``trainer/call.py``: ``_call_callback_hooks`` then ``_call_lightning_module_hook``);
``on_train_epoch_end`` goes to the callbacks, the module, then the
"monitoring" callbacks (``EarlyStopping``, checkpoints), and
``on_load_checkpoint`` to the module first. One Runner stage may run several
such methods (``before_train``: ``setup``, ``on_fit_start``,
``on_train_start``), so the calls of all participants go through this one hook,
method by method. The backward and optimizer methods (``on_before_backward``
...) come from the optimizer wrapper's events (``before_backward``,
``after_backward``, ``before_step``: gradients unscaled under AMP,
``before_zero_grad``), registered while training runs.

Participants: the :class:`~.lightning_runner.LightningCallbackHook` of each callback (in the
order of the priority it was registered with, then of registration, as the Runner's hook table
holds them) and the run's
:class:`~.lightning_module.LightningModuleHook` (its ``calls``). The hook is
re-registered when one joins, so that it has only the stages their methods
need (priority ``NORMAL``: after the trainer facade and the module's
bookkeeping, before ``LoggerHook`` and the checkpoint hooks).

Example::

    >>> sorted(OPTIMIZER_EVENTS)
    ['after_backward', 'before_backward', 'before_step', 'before_zero_grad']
    >>> METHOD_STAGES["on_train_batch_end"]
    ('after_train_iter',)
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import HookError, HookHandle
from hookline.engine import distributed
from hookline.engine.data import loader_length
from hookline.engine.hook import STAGES, Hook
from hookline.engine.signals import TrainingInterrupted

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["METHOD_STAGES", "OPTIMIZER_EVENTS", "OPTIMIZER_METHODS", "LightningCalls"]

#: the optimizer wrapper's event -> the Lightning method it calls, and whether it passes the
#: optimizer
OPTIMIZER_EVENTS = {"before_backward": ("on_before_backward", False),
                    "after_backward": ("on_after_backward", False),
                    "before_step": ("on_before_optimizer_step", True),
                    "before_zero_grad": ("on_before_zero_grad", True)}
#: Lightning methods called from the optimizer wrapper's events
OPTIMIZER_METHODS = tuple(method for method, _ in OPTIMIZER_EVENTS.values())

_SETUP = ("before_train", "before_val", "before_test", "after_run")
_EPOCH_END = ("before_train_epoch", "after_train_epoch", "after_val", "after_train")
#: Lightning method -> the Runner stages that call it
METHOD_STAGES: dict[str, tuple[str, ...]] = {
    # a checkpoint loaded as a run starts: set up first (after_load_checkpoint)
    "configure_model": (), "prepare_data": ("after_load_checkpoint", *_SETUP),
    "setup": ("after_load_checkpoint", *_SETUP), "teardown": _SETUP,
    "on_fit_start": ("before_train",), "on_fit_end": ("after_train",),
    "on_train_start": ("before_train",), "on_train_end": ("after_train",),
    "on_train_epoch_start": ("before_train_epoch",), "on_train_epoch_end": _EPOCH_END,
    "on_train_batch_start": ("before_train_iter",), "on_train_batch_end": ("after_train_iter",),
    **{f"on_{phase}_{point}": (f"{when}_{stage}{suffix}",)
       for phase, stage in (("validation", "val"), ("test", "test"))
       for point, when, suffix in (("start", "before", ""), ("end", "after", ""),
                                   ("epoch_start", "before", "_epoch"),
                                   ("epoch_end", "after", "_epoch"),
                                   ("batch_start", "before", "_iter"),
                                   ("batch_end", "after", "_iter"))},
    "on_save_checkpoint": ("before_save_checkpoint",),
    "on_load_checkpoint": ("after_load_checkpoint",),
    "on_exception": ("on_exception",),
    **{method: ("before_train", "after_train") for method in OPTIMIZER_METHODS},
}
_ALWAYS = ("after_train", "after_run", "on_exception")  # releasing the module, the listeners
#: the run a Runner has in progress (``runner.running``) -> the stage Lightning's setup() gets
SETUP_STAGES = {"train": "fit", "val": "validate", "test": "test"}


class LightningCalls(Hook):
    """Calls the participants' Lightning methods in ``Trainer.fit``'s order (see the module
    docstring)."""

    priority = "NORMAL"

    def __init__(self, runner: Runner, trainer: Any = None) -> None:
        self.runner = runner
        self.trainer = trainer  # the run's LightningTrainer
        self.callbacks: list[Any] = []  # LightningCallbackHook, in the hook table's order
        self._ordered = True  # whether callbacks follows the table's (priority) order
        self.module: Any = None  # the LightningModuleHook of a LightningModule model
        self._handle: HookHandle | None = None
        self._listening: list[HookHandle] = []  # on the optimizer wrapper's events
        self._stage_name: str | None = None  # the setup() stage of the current run
        self._epoch_open = False  # a training epoch started whose on_train_epoch_end is due
        self._epoch_after_val = False  # ... and it waits for the epoch's validation
        self._cut = False  # ... and should_stop cut it short (counted once it has ended)

    def __repr__(self) -> str:
        return f"LightningCalls({len(self.callbacks)} callback(s), module={self.module is not None})"

    @property
    def table_label(self) -> str:
        """How ``runner.hook_table()`` names it: with the module and callbacks it calls."""
        names = [type(self.module).__name__] if self.module is not None else []
        names += [type(hook.callback).__name__ for hook in self.callbacks]
        return f"LightningCalls[{', '.join(names)}]"

    # -- participants ------------------------------------------------------------------------------
    def join(self, participant: Any, module: bool = False) -> None:
        """Add a callback adapter (or, ``module=True``, the module's hook) and re-register this
        hook with the stages the participants' methods need."""
        if module:
            self.module = participant
        else:
            self.callbacks.append(participant)
            self._ordered = False  # its place by priority is known once the Runner adds it
        if self._handle is not None:
            self._handle.remove()
        self._handle = self.runner.register_hook(self)

    def _methods(self) -> set[str]:
        methods = set().union(*(c.methods for c in self.callbacks))
        if self.module is not None:
            methods |= self.module.calls.methods
        return methods

    def triggered_stages(self) -> list[str]:
        needed = set(_ALWAYS).union(*(METHOD_STAGES.get(m, ()) for m in self._methods()))
        return [stage for stage in STAGES if stage in needed]

    # -- calling -----------------------------------------------------------------------------------
    def _order(self) -> None:
        """Sort the callbacks as the Runner's hook table holds their hooks: by the priority
        they were registered with, then in registration order (Lightning's list order)."""
        position = {id(hook): index for index, hook in enumerate(self.runner.hooks.hooks)}
        self.callbacks.sort(key=lambda adapter: position.get(id(adapter), len(position)))
        self._ordered = True

    def _callbacks(self, name: str, *args: Any, monitoring: bool | None = None) -> None:
        if not self._ordered:
            self._order()
        for adapter in self.callbacks:
            if name in adapter.methods and (monitoring is None or adapter.monitoring == monitoring):
                try:
                    adapter.call(name, *args)
                except HookError:
                    raise
                except Exception as exc:
                    raise HookError(adapter.callback, name, exc) from exc  # names the callback

    def _module(self, name: str, *args: Any) -> Any:
        return None if self.module is None else self.module.calls.call(name, *args)

    def _all(self, name: str, *args: Any) -> None:
        """``name`` on the callbacks, then on the module (Lightning's order)."""
        self._callbacks(name, *args)
        self._module(name, *args)

    def _setup(self, runner: Runner, stage: str) -> None:
        """``prepare_data`` and ``setup(stage)``, once per run: at its first stage, or before
        the checkpoint it resumes goes in (Lightning sets up, then restores)."""
        if self._stage_name is not None:
            return
        self._stage_name = stage
        if self.trainer is not None:
            self.trainer.enter(stage)  # setup sees trainer.state.fn / training as in Lightning
        if self.module is not None and "prepare_data" in self.module.calls.methods:
            if runner.rank == 0:  # Lightning: before the callbacks' setup
                self.module.calls.call("prepare_data")
            distributed.barrier()
        self._all("setup", lightning_stage(stage))

    # -- training ------------------------------------------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        self._setup(runner, "fit")
        self._all("on_fit_start")
        self._all("on_train_start")
        self._listen(runner.optim_wrapper)

    def before_train_epoch(self, runner: Runner) -> None:
        self._epoch_open, self._epoch_after_val, self._cut = True, False, False
        if not resumed_mid_epoch(runner):  # Lightning skips it for an epoch it resumes
            self._all("on_train_epoch_start")

    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        index = batch_in_epoch(runner, batch_idx)
        self._callbacks("on_train_batch_start", data_batch, index)
        if self.module is not None:
            self.module.calls.start_batch(runner, data_batch, index)

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: Any = None) -> None:
        self._all("on_train_batch_end", detached_loss(outputs, accumulated(runner)), data_batch,
                  batch_in_epoch(runner, batch_idx))

    def after_train_epoch(self, runner: Runner) -> None:
        loop = runner.train_loop
        if runner.by_epoch and loop is not None and loop.val_due_after_epoch(runner.epoch + 1):
            self._epoch_after_val = True  # Lightning validates before on_train_epoch_end
        else:
            self._end_epoch()

    def end_epoch_after_cut_validation(self) -> None:
        """The validation starting now is that of the epoch ``should_stop`` cut short: its
        ``on_train_epoch_end`` follows that validation, as in Lightning (before the
        ``after_train`` stage's other hooks: a Keras callback's ``on_train_end``)."""
        if self._epoch_open:
            self._epoch_after_val = self._cut = True

    def _end_epoch(self) -> None:
        if self._epoch_open:
            cut, self._cut = self._cut, False
            self._epoch_open = self._epoch_after_val = False
            if self.trainer is not None and self.trainer.log_hook is not None:
                self.trainer.log_hook.release_epoch_values()  # Lightning's appear now
            self._callbacks("on_train_epoch_end", monitoring=False)
            self._module("on_train_epoch_end")
            self._callbacks("on_train_epoch_end", monitoring=True)
            if cut and self.trainer is not None:
                self.trainer.count_cut_epoch()  # on_train_end sees it counted, as in Lightning

    def after_train(self, runner: Runner) -> None:
        if self._epoch_open and runner.by_epoch:
            self._cut = True
        self._end_epoch()  # an epoch cut by should_stop still ends, as in Lightning
        self._all("on_train_end")
        self._all("on_fit_end")
        self._unlisten()
        log_hook = self.trainer.log_hook if self.trainer is not None else None
        if log_hook is not None:
            log_hook.close_training()

    # -- validation and test ----------------------------------------------------------------------
    def before_val(self, runner: Runner) -> None:
        self._setup(runner, "validate")
        self._all("on_validation_start")

    def before_val_epoch(self, runner: Runner) -> None:
        self._all("on_validation_epoch_start")

    def before_val_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self._all("on_validation_batch_start", data_batch, batch_idx)

    def after_val_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                       outputs: Any = None) -> None:
        self._all("on_validation_batch_end", self._step_outputs(outputs), data_batch, batch_idx)

    def _step_outputs(self, outputs: Any) -> Any:
        """A ``LightningModule``'s validation / test step that returned None gave the Runner
        ``{}``: Lightning passes the callbacks None."""
        if self.module is not None and isinstance(outputs, dict) and not outputs:
            return None
        return outputs

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._all("on_validation_epoch_end")  # what the module logs is reported with the epoch

    def after_val(self, runner: Runner) -> None:
        if self.trainer is None:
            self._all("on_validation_end")
        else:
            with self.trainer.ending_validation():
                self._all("on_validation_end")
        if self._epoch_after_val:
            self._end_epoch()

    def before_test(self, runner: Runner) -> None:
        self._setup(runner, "test")
        self._all("on_test_start")

    def before_test_epoch(self, runner: Runner) -> None:
        self._all("on_test_epoch_start")

    def before_test_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        self._all("on_test_batch_start", data_batch, batch_idx)

    def after_test_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                        outputs: Any = None) -> None:
        self._all("on_test_batch_end", self._step_outputs(outputs), data_batch, batch_idx)

    def after_test_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._all("on_test_epoch_end")

    def after_test(self, runner: Runner) -> None:
        self._all("on_test_end")

    # -- the run around them -------------------------------------------------------------------------
    def after_run(self, runner: Runner) -> None:
        if self._stage_name is not None:
            stage, self._stage_name = self._stage_name, None  # the next run sets up again
            if self.module is None:
                self._all("teardown", lightning_stage(stage))
            else:
                with self.module.attached():  # the module still has its trainer, as in Lightning
                    self._all("teardown", lightning_stage(stage))
        log_hook = self.trainer.log_hook if self.trainer is not None else None
        if log_hook is not None:
            log_hook.release()

    def before_save_checkpoint(self, runner: Runner, checkpoint: dict[str, Any]) -> None:
        self._callbacks("on_save_checkpoint", checkpoint)
        if self.module is not None:
            with self.module.attached():  # also when the run is over
                self._module("on_save_checkpoint", checkpoint)

    def after_load_checkpoint(self, runner: Runner, checkpoint: dict[str, Any]) -> None:
        """Lightning's restore order: ``setup`` (when the checkpoint is loaded as a run starts),
        the module's ``on_load_checkpoint``, the callbacks'; their ``load_state_dict`` follows
        as the checkpoint is applied."""
        stage = SETUP_STAGES.get(str(getattr(runner, "running", None)))
        if self.module is None:
            if stage is not None:
                self._setup(runner, stage)
            self._callbacks("on_load_checkpoint", checkpoint)
            return
        with self.module.attached():  # Lightning restores the module first
            if stage is not None:
                self._setup(runner, stage)
            self._module("on_load_checkpoint", checkpoint)
            self._callbacks("on_load_checkpoint", checkpoint)

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        self._unlisten()
        # the run failed: no teardown (as in Lightning), the next run starts over
        self._stage_name, self._epoch_open, self._epoch_after_val = None, False, False
        self._cut = False
        if self.trainer is not None:
            self.trainer.interrupted = True  # Lightning's status INTERRUPTED, for any failure
        self._callbacks("on_exception", lightning_exception(exception))

    # -- the optimizer wrapper's events ------------------------------------------------------------
    def _listen(self, wrapper: Any) -> None:
        """Register the backward / optimizer methods on ``wrapper``'s events (each wrapper of an
        ``OptimWrapperDict``) for the training run."""
        wanted = self._methods()
        if wrapper is None or self._listening or not wanted.intersection(OPTIMIZER_METHODS):
            return
        for inner in (wrapper.values() if hasattr(wrapper, "values") else [wrapper]):
            for event, (method, with_optimizer) in OPTIMIZER_EVENTS.items():
                point = getattr(inner, event, None)
                if point is not None and method in wanted:
                    bound = (inner.optimizer,) if with_optimizer else ()
                    self._listening.append(point.register(self._firing(method, bound)))

    def _firing(self, method: str, bound: tuple[Any, ...]) -> Any:
        def fire(*args: Any) -> None:
            self._all(method, *bound, *args)
        fire.__qualname__ = f"LightningCalls.{method}"
        return fire

    def _unlisten(self) -> None:
        handles, self._listening = self._listening, []
        for handle in handles:
            handle.remove()


def lightning_stage(stage: str) -> Any:
    """``stage`` as Lightning passes it to ``setup`` / ``teardown``: a ``TrainerFn`` (a str
    enum, equal to ``"fit"`` ...), or the str itself without Lightning."""
    try:
        from lightning.pytorch.trainer.states import TrainerFn  # noqa: PLC0415
    except ImportError:  # pragma: no cover  (callbacks and modules need Lightning)
        return stage
    return TrainerFn(stage)


def lightning_exception(exception: BaseException) -> BaseException:
    """The exception Lightning would pass ``on_exception``: one raised in a hook unwrapped from
    its ``HookError``; a ``KeyboardInterrupt`` (whose ``__cause__`` is hookline's
    ``TrainingInterrupted``) for a run Ctrl-C stopped."""
    if isinstance(exception, HookError) and exception.__cause__ is not None:
        return exception.__cause__
    if isinstance(exception, TrainingInterrupted) and exception.signum == signal.SIGINT:
        interrupt = KeyboardInterrupt(str(exception))
        interrupt.__cause__ = exception
        return interrupt
    return exception


def resumed_mid_epoch(runner: Runner) -> bool:
    """Whether the training epoch starting now resumes one a checkpoint cut (its first
    batches ran before the resume)."""
    if runner.by_epoch:
        return runner.state.batch > 0
    return runner.iter > 0 and batch_in_epoch(runner, runner.iter) > 0


def accumulated(runner: Runner) -> int:
    """The wrapper's ``accumulative_counts`` (Lightning's ``accumulate_grad_batches``)."""
    wrapper = runner.optim_wrapper
    if wrapper is not None and hasattr(wrapper, "values"):  # OptimWrapperDict
        wrapper = next(iter(wrapper.values()), None)
    return int(getattr(wrapper, "accumulative_counts", 1) or 1)


def batch_in_epoch(runner: Runner, batch_idx: int) -> int:
    """Lightning's ``batch_idx``: the batch within the epoch (a ``max_iters`` run counts
    iterations over the whole run)."""
    if runner.by_epoch:
        return batch_idx
    length = loader_length(runner.train_dataloader)
    if length is None and runner.train_loop is not None:  # no length: known once a pass ends
        length = runner.train_loop.epoch_length
    return batch_idx % length if length else batch_idx


def detached_loss(outputs: Any, accumulate: int = 1) -> Any:
    """The training step's outputs as Lightning's ``on_train_batch_end`` gets them: ``loss``
    detached from its graph (so ``outputs["loss"].numpy()`` works and a callback keeping it
    keeps no graph alive) and, under gradient accumulation, divided by ``accumulate`` (the
    loss Lightning backpropagates); the other entries as they are, as in Lightning.

    Example::

        >>> import torch
        >>> loss = (torch.ones(2, requires_grad=True) * 2).sum()
        >>> detached_loss({"loss": loss, "n": 2})["loss"].requires_grad
        False
        >>> detached_loss({"loss": loss}, accumulate=4)["loss"].item()
        1.0
    """
    if isinstance(outputs, dict):
        loss = outputs.get("loss")
        if isinstance(loss, torch.Tensor) and (loss.requires_grad or accumulate != 1):
            loss = loss.detach()
            return {**outputs, "loss": loss / accumulate if accumulate != 1 else loss}
    return outputs
