"""The loops the Runner drives, as objects with MMEngine's names and meaning.

``runner.train_loop`` is an :class:`EpochBasedTrainLoop` or an
:class:`IterBasedTrainLoop`; ``runner.val_loop`` / ``runner.test_loop`` are
:class:`ValLoop` / :class:`TestLoop`. Each fires MMEngine's stages in
MMEngine's order. All are registered in ``LOOPS``, so a config may name its
own subclass (``train_loop: {type: MyLoop}``).

The position of the run (epoch, iteration, where to resume, the stop request)
belongs to ``runner.state`` (:class:`~hookline.engine.run_state.RunState`);
the train loop moves it, nothing else does.

Example::

    >>> from hookline.engine.loops import LOOPS
    >>> {"EpochBasedTrainLoop", "IterBasedTrainLoop", "ValLoop", "TestLoop"} <= set(LOOPS)
    True
"""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError

from .checks import positive_int
from .data import move_to, set_epoch, skip_batches
from .evaluator import Evaluator
from .registries import LOOPS
from .run_state import describe_position

if TYPE_CHECKING:  # pragma: no cover
    from .run_state import RunState
    from .runner import Runner

__all__ = ["LOOPS", "BaseLoop", "EpochBasedTrainLoop", "IterBasedTrainLoop", "TestLoop",
           "TrainLoop", "ValLoop"]


def train_loop_config(train_loop: str | Mapping[str, Any] | None, *, max_epochs: int | None,
                      max_iters: int | None, val_interval: int | None) -> dict[str, Any] | None:
    """The ``LOOPS`` config of a Runner's train loop, or None when it has no length.

    ``train_loop`` (a loop name or a config, like MMEngine's ``train_cfg``) may
    hold ``max_epochs`` / ``max_iters`` / ``val_interval`` itself; the
    Runner's arguments of the same name fill in what it leaves out, and the
    same key given twice with different values is a :class:`ConfigError`.

    Example::

        >>> train_loop_config({"type": "EpochBasedTrainLoop", "val_interval": 2},
        ...                   max_epochs=12, max_iters=None, val_interval=None)
        {'type': 'EpochBasedTrainLoop', 'val_interval': 2, 'max_epochs': 12}
    """
    if train_loop is not None and not isinstance(train_loop, (str, Mapping)):
        raise ConfigError(f"train_loop must be a LOOPS name or a config dict, got {train_loop!r}")
    cfg: dict[str, Any] = dict(train_loop) if isinstance(train_loop, Mapping) else \
        {"type": train_loop}
    for key, value in (("max_epochs", max_epochs), ("max_iters", max_iters),
                       ("val_interval", val_interval)):
        if value is None:
            continue
        if cfg.get(key, value) != value:
            raise ConfigError(f"{key} is {value!r} for the Runner and {cfg[key]!r} in train_loop: "
                              "give it once")
        cfg[key] = value
    if "max_epochs" in cfg and "max_iters" in cfg:
        raise ConfigError("give max_epochs or max_iters, not both")
    if "max_epochs" not in cfg and "max_iters" not in cfg:
        return None
    if cfg.get("type") is None:
        cfg["type"] = "EpochBasedTrainLoop" if "max_epochs" in cfg else "IterBasedTrainLoop"
    return cfg


def _note(exc: BaseException, message: str) -> None:
    """Add where the error happened to ``exc`` (shown under its traceback)."""
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(message)


class BaseLoop(abc.ABC):
    """A loop over ``dataloader`` driven by ``runner`` (``run()`` does the work)."""

    def __init__(self, runner: Runner, dataloader: Any) -> None:
        self.runner = runner
        #: assignable: a train loop reads it at the start of every epoch
        self.dataloader = dataloader

    @abc.abstractmethod
    def run(self) -> Any:
        """Run the loop; what it returns is the loop's result (the model, the metrics)."""


class TrainLoop(BaseLoop):
    """What both train loops share: counters, the stop flag, when validation runs, one iteration."""

    by_epoch = True

    def __init__(self, runner: Runner, dataloader: Any, *, val_begin: int = 1,
                 val_interval: int = 1) -> None:
        super().__init__(runner, dataloader)
        self.val_begin = positive_int(val_begin, "val_begin")
        self.val_interval = positive_int(val_interval, "val_interval")

    # -- MMEngine's attributes -------------------------------------------------------------
    @property
    def state(self) -> RunState:
        return self.runner.state

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def iter(self) -> int:
        return self.state.iter

    @property
    def stop_training(self) -> bool:
        return self.state.stop_training

    @stop_training.setter
    def stop_training(self, value: bool) -> None:
        self.state.stop_training = bool(value)

    @property
    def epoch_length(self) -> int:
        """Batches in one pass over the current dataloader."""
        return len(self.dataloader)

    @property
    @abc.abstractmethod
    def max_epochs(self) -> int:
        """Passes over the data the run makes."""

    @property
    @abc.abstractmethod
    def max_iters(self) -> int:
        """Iterations the run makes."""

    # -- when validation runs: the one place that decides ----------------------------------
    def _val_due(self, done: int, last: int) -> bool:
        return (self.runner.val_loop is not None and done >= self.val_begin
                and (done % self.val_interval == 0 or done == last))

    def val_due_after_epoch(self, epochs_done: int) -> bool:  # noqa: ARG002  (epoch-based loops use it)
        """Whether validation runs right after ``epochs_done`` epochs finish."""
        return False

    def val_due_after_iter(self, iters_done: int) -> bool:  # noqa: ARG002  (iteration-based loops use it)
        """Whether validation runs right after ``iters_done`` iterations finish."""
        return False

    # -- one iteration ------------------------------------------------------------------------
    def run_iter(self, batch_idx: int, data_batch: Any, batch_in_epoch: int) -> None:
        """Hooks, the model's step and the optimizer update, hooks; then count the iteration."""
        runner = self.runner
        hooks = runner.hooks
        stages = hooks.stages
        data_batch = move_to(data_batch, runner.device)
        if stages["before_train_iter"]:
            hooks.call(runner, "before_train_iter", batch_idx=batch_idx, data_batch=data_batch)
        try:
            outputs = runner.train_step(data_batch, batch_in_epoch)
        except Exception as exc:
            _note(exc, f"hookline: raised in the training step of iteration {self.iter} "
                       f"(epoch {self.epoch + 1}, batch {batch_in_epoch})")
            raise
        runner.outputs = outputs
        runner.message_hub.update_many("train", outputs)
        self.state.complete_iter(batch_in_epoch, self._val_follows_iter())
        if stages["after_train_iter"]:
            hooks.call(runner, "after_train_iter", batch_idx=batch_idx, data_batch=data_batch,
                       outputs=outputs)
        self.state.advance_iter()

    def _val_follows_iter(self) -> bool:
        """Whether validation runs right after the iteration that is ending (iteration-based)."""
        return False

    def _validate_pending(self) -> None:
        """After a resume from a checkpoint written between the end of an epoch (or
        iteration) and its validation: run that validation first, as the run would have."""
        if self.state.val_pending and self.runner.val_loop is not None:
            self._validate()
            self.runner.check_stop()

    def _say_if_done(self) -> None:
        """One log line when a resumed run has nothing left to train."""
        state = self.state
        if state.val_pending:
            return
        if state.stop_training:
            reason = "the run had stopped early (stop_training, e.g. by early stopping)"
        elif self.by_epoch and state.epoch >= self.max_epochs:
            reason = f"all {self.max_epochs} epochs are done; raise max_epochs to train on"
        elif not self.by_epoch and state.iter >= self.max_iters:
            reason = f"all {self.max_iters} iterations are done; raise max_iters to train on"
        else:
            return
        self.runner.logger.info("nothing left to train %s: %s", describe_position(
            *state.resume_point, by_epoch=self.by_epoch), reason)

    def _count_updates(self, start: int, total: int) -> None:
        """Accumulation groups count from ``start`` of ``total`` iterations (an epoch, or the run)."""
        wrapper = self.runner.optim_wrapper
        if wrapper is not None:
            wrapper.initialize_count_status(self.runner.model, start, total)

    def _validate(self) -> None:
        assert self.runner.val_loop is not None
        self.runner.val_loop.run()


@LOOPS.register()
class EpochBasedTrainLoop(TrainLoop):
    """``max_epochs`` passes over the training data, validating every ``val_interval`` epochs
    from epoch ``val_begin`` on (and after the last epoch)."""

    def __init__(self, runner: Runner, dataloader: Any, max_epochs: int, val_begin: int = 1,
                 val_interval: int = 1) -> None:
        super().__init__(runner, dataloader, val_begin=val_begin, val_interval=val_interval)
        self._max_epochs = positive_int(max_epochs, "max_epochs")
        # fixed here, as in MMEngine: a loader swapped in later does not change the plan
        self._max_iters = self._max_epochs * len(dataloader)

    @property
    def max_epochs(self) -> int:
        return self._max_epochs

    @property
    def max_iters(self) -> int:
        """``max_epochs`` x batches per epoch of the loader the loop was built with."""
        return self._max_iters

    def val_due_after_epoch(self, epochs_done: int) -> bool:
        return self._val_due(epochs_done, self._max_epochs)

    def run(self) -> torch.nn.Module:
        runner = self.runner
        runner.hooks.call(runner, "before_train")
        self._say_if_done()
        self._validate_pending()
        while self.epoch < self._max_epochs and not self.stop_training:
            if not self.run_epoch():
                break  # stopped mid-epoch
            runner.check_stop()  # a signal during the epoch-end stages stops before validation
            if self.val_due_after_epoch(self.epoch):
                self._validate()
                runner.check_stop()
        runner.hooks.call(runner, "after_train")
        runner.check_stop()  # a signal while training ended is not lost either
        return runner.model

    def run_epoch(self) -> bool:
        """One pass (the rest of it, after a resume), then the epoch-end stages; False when
        training stopped before the pass ended."""
        runner, state = self.runner, self.state
        start = state.take_resume_batch()
        runner.hooks.call(runner, "before_train_epoch")
        loader = self.dataloader  # a loader a hook assigned, even in before_train_epoch, runs now
        length = len(loader)
        set_epoch(loader, self.epoch)
        if 0 < start < length:
            skip_batches(loader, start)
        self._count_updates(start, length)
        if start < length:
            for batch_idx, data_batch in enumerate(loader, start):
                self.run_iter(batch_idx, data_batch, batch_idx)
                if runner.check_stop():
                    break
        if self.stop_training and state.batch < length:
            return False
        state.complete_epoch(self.val_due_after_epoch(self.epoch + 1))
        runner.hooks.call(runner, "after_train_epoch")
        state.advance_epoch()
        return True


@LOOPS.register()
class IterBasedTrainLoop(TrainLoop):
    """``max_iters`` iterations, cycling the data; ``batch_idx`` is the global iteration
    (MMEngine's meaning) and the epoch stages fire once, around the whole run. (A model's
    ``training_step(batch, batch_idx)`` gets the position in the current pass over the data.)"""

    by_epoch = False

    def __init__(self, runner: Runner, dataloader: Any, max_iters: int, val_begin: int = 1,
                 val_interval: int = 1000) -> None:
        super().__init__(runner, dataloader, val_begin=val_begin, val_interval=val_interval)
        self._max_iters = positive_int(max_iters, "max_iters")
        self._max_epochs = math.ceil(self._max_iters / len(dataloader))

    @property
    def max_iters(self) -> int:
        return self._max_iters

    @property
    def max_epochs(self) -> int:
        """Passes over the data the run makes (the last one may be partial)."""
        return self._max_epochs

    def val_due_after_iter(self, iters_done: int) -> bool:
        return self._val_due(iters_done, self._max_iters)

    def _val_follows_iter(self) -> bool:
        return self._val_due(self.iter + 1, self._max_iters)

    def run(self) -> torch.nn.Module:
        runner = self.runner
        runner.hooks.call(runner, "before_train")
        self._say_if_done()
        runner.hooks.call(runner, "before_train_epoch")
        self._count_updates(self.iter, self._max_iters)
        self._validate_pending()
        while self.iter < self._max_iters and not self.stop_training:
            loader = self.dataloader
            length = len(loader)
            data_pass, start = divmod(self.iter, length)
            set_epoch(loader, data_pass)
            if 0 < start < length:
                skip_batches(loader, start)
            for position, data_batch in enumerate(loader, start):
                self.run_iter(self.iter, data_batch, position)
                if self.val_due_after_iter(self.iter):
                    self._validate()
                if runner.check_stop() or self.iter >= self._max_iters:
                    break
        runner.hooks.call(runner, "after_train_epoch")
        runner.hooks.call(runner, "after_train")
        runner.check_stop()  # a signal while training ended is not lost either
        return runner.model


@LOOPS.register()
class ValLoop(BaseLoop):
    """One pass over ``dataloader`` without gradients; ``metrics`` are computed over it.

    ``run()`` returns the metrics dict (also kept as :attr:`last_metrics` and in
    ``message_hub`` as ``val/<name>`` and ``info["val_metrics"]``).
    """

    mode = "val"

    def __init__(self, runner: Runner, dataloader: Any, metrics: Any = None) -> None:
        super().__init__(runner, dataloader)
        #: name -> metric callable or torchmetrics metric
        self.metrics = dict(metrics if metrics is not None else runner.metrics)
        self.last_metrics: dict[str, float] = {}
        #: what accumulates the current pass (MMEngine's ``val_loop.evaluator``): a hook may
        #: run ``run_iter(i, batch)`` itself and read ``evaluator.evaluate(size)``
        self.evaluator = Evaluator(self.metrics)

    def run(self) -> dict[str, float]:
        runner, mode = self.runner, self.mode
        call = runner.hooks.call
        model = runner.model
        was_training = model.training
        evaluator = self.evaluator = Evaluator(self.metrics)
        call(runner, f"before_{mode}")
        call(runner, f"before_{mode}_epoch")
        model.eval()
        try:
            with torch.no_grad():
                for batch_idx, data_batch in enumerate(self.dataloader):
                    self.run_iter(batch_idx, data_batch, evaluator)
            metrics = evaluator.compute()
        finally:
            model.train(was_training)
        if mode == "val":
            runner.state.complete_val()  # a checkpoint written from here on does not repeat it
        for name, value in metrics.items():
            runner.message_hub.update(f"{mode}/{name}", value)
        runner.message_hub.info[f"{mode}_metrics"] = metrics
        self.last_metrics = metrics
        call(runner, f"after_{mode}_epoch", metrics=metrics)
        call(runner, f"after_{mode}")
        return metrics

    def run_iter(self, batch_idx: int, data_batch: Any, evaluator: Evaluator | None = None
                 ) -> None:
        """One batch: hooks, the model's step, the outputs into ``evaluator`` (default:
        :attr:`evaluator`), hooks."""
        runner, mode = self.runner, self.mode
        if evaluator is None:
            evaluator = self.evaluator
        data_batch = move_to(data_batch, runner.device)
        runner.hooks.call(runner, f"before_{mode}_iter", batch_idx=batch_idx, data_batch=data_batch)
        try:
            outputs = runner.eval_step(data_batch, mode, batch_idx)
        except Exception as exc:
            _note(exc, f"hookline: raised in the {mode} step of batch {batch_idx}")
            raise
        evaluator.process(outputs)
        runner.hooks.call(runner, f"after_{mode}_iter", batch_idx=batch_idx, data_batch=data_batch,
                          outputs=outputs)


@LOOPS.register()
class TestLoop(ValLoop):
    """:class:`ValLoop` for the test set (``*_test_*`` stages, ``test/<name>`` metrics)."""

    mode = "test"
