"""``runner`` of hookline hooks inside a ``lightning.Trainer``: a facade over the Trainer.

:class:`~hookline.integrations.lightning.HookCallback` passes one to every
hook it runs. Hooks read what they read of a hookline Runner:

============================  ===============================================================
attribute                     from the Trainer
============================  ===============================================================
``model``                     ``pl_module``
``epoch``                     finished epochs (``current_epoch``, plus one once the epoch's
                              training batches are done, as a Runner counts)
``iter``                      finished training batches (Lightning's batch progress)
``max_epochs`` / ``max_iters``  ``max_epochs``; the batches of ``max_steps`` optimizer steps
                              (``accumulate_grad_batches`` each), or epochs x batches per epoch
``optim_wrapper`` / ``optimizer``  an ``OptimWrapper`` around ``trainer.optimizers[0]`` (read:
                              ``get_lr()``, ``param_groups``; Lightning does the steps)
``param_schedulers``          ``trainer.lr_scheduler_configs``
``message_hub``               a hookline ``MessageHub``: ``train/<name>`` per step output,
                              ``info["val_metrics"]``
``logger``                    a ``logging.Logger`` printing hookline's format
``work_dir``                  ``trainer.log_dir`` (else ``default_root_dir``)
``stop_training``             ``trainer.should_stop`` (read/write)
``rank``, ``world_size``      ``global_rank``, ``world_size``
============================  ===============================================================

Example::

    >>> from types import SimpleNamespace
    >>> trainer = SimpleNamespace(should_stop=False, current_epoch=0, max_epochs=3,
    ...                           max_steps=-1, num_training_batches=5)
    >>> runner = LightningRunner()
    >>> runner.bind(trainer, None)
    >>> runner.stop_training = True
    >>> trainer.should_stop, runner.max_iters
    (True, 15)
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import torch

from hookline.engine.hook_table import HookTable
from hookline.engine.logs import make_logger
from hookline.engine.message_hub import MessageHub
from hookline.engine.optim_wrapper import OptimWrapper
from hookline.engine.optim_wrapper_dict import OptimWrapperDict

__all__ = ["LightningRunner"]


class _Loop:
    """``runner.val_loop`` / ``test_loop`` / ``train_loop``: what hooks read of the loops."""

    def __init__(self, runner: LightningRunner) -> None:
        self.runner = runner
        self.last_metrics: dict[str, float] = {}

    @property
    def dataloader(self) -> Any:
        return self.runner.train_dataloader

    @property
    def max_epochs(self) -> int | None:
        return self.runner.max_epochs

    @property
    def max_iters(self) -> int | None:
        return self.runner.max_iters

    @property
    def epoch_length(self) -> int | None:
        """Training batches per epoch (Lightning's ``num_training_batches``); None if unknown."""
        return self.runner.batches_per_epoch

    @property
    def val_interval(self) -> int:
        return int(getattr(self.runner.trainer, "check_val_every_n_epoch", None) or 1)

    def val_due_after_epoch(self, epochs_done: int) -> bool:
        trainer = self.runner.trainer
        return bool(getattr(trainer, "val_dataloaders", None) is not None
                    and epochs_done % self.val_interval == 0)

    def val_due_after_iter(self, iters_done: int) -> bool:
        return False


class LightningRunner:
    """The hookline ``runner`` inside a Lightning Trainer (see the module docstring)."""

    def __init__(self, hooks: HookTable | None = None) -> None:
        self.trainer: Any = None
        self.model: Any = None
        self.hooks = hooks if hooks is not None else HookTable()
        self.message_hub = MessageHub()
        self.outputs: Any = None
        self.val_loop = _Loop(self)
        self.test_loop = _Loop(self)
        self.train_loop = _Loop(self)
        #: Lightning's ``current_epoch`` when its training batches ended (a Runner counts the
        #: epoch as done from then on; Lightning after its ``on_train_epoch_end``)
        self.ended_epoch: int | None = None
        self._logger: logging.Logger | None = None
        self._wrappers: tuple[tuple[int, ...], Any] = ((), None)

    def bind(self, trainer: Any, pl_module: Any) -> None:
        """Point the facade at the Trainer and module of the call in progress."""
        self.trainer, self.model = trainer, pl_module

    # -- position ---------------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        current = int(self.trainer.current_epoch)
        return current + 1 if self.ended_epoch == current else current

    @property
    def iter(self) -> int:
        loop = getattr(self.trainer, "fit_loop", None)
        try:
            return int(loop.epoch_loop.batch_progress.total.completed)  # type: ignore[union-attr]
        except AttributeError:
            return int(getattr(self.trainer, "global_step", 0))

    @property
    def by_epoch(self) -> bool:
        max_epochs = getattr(self.trainer, "max_epochs", None)
        return max_epochs is not None and max_epochs != -1

    @property
    def max_epochs(self) -> int | None:
        if self.by_epoch:
            return int(self.trainer.max_epochs)
        steps, per_epoch = self._max_step_batches(), self._per_epoch()
        return math.ceil(steps / per_epoch) if steps and per_epoch else None

    @property
    def max_iters(self) -> int | None:
        steps, per_epoch = self._max_step_batches(), self._per_epoch()
        by_epochs = int(self.trainer.max_epochs) * per_epoch if self.by_epoch and per_epoch else None
        if steps and by_epochs:
            return min(steps, by_epochs)
        return steps or by_epochs

    @property
    def batches_per_epoch(self) -> int | None:
        """``trainer.num_training_batches`` when finite, else None."""
        return self._per_epoch()

    def _max_steps(self) -> int | None:
        steps = getattr(self.trainer, "max_steps", -1)
        return int(steps) if steps is not None and steps > 0 else None

    def _max_step_batches(self) -> int | None:
        """The training batches ``max_steps`` takes: Lightning counts optimizer steps, each
        of ``accumulate_grad_batches`` batches, an epoch's last group ending with the epoch."""
        steps = self._max_steps()
        if steps is None:
            return None
        group = int(getattr(self.trainer, "accumulate_grad_batches", 1) or 1)
        per_epoch = self._per_epoch()
        if group == 1 or not per_epoch:
            return steps * group
        epochs, rest = divmod(steps, -(-per_epoch // group))
        return epochs * per_epoch + rest * group

    def _per_epoch(self) -> int | None:
        batches = getattr(self.trainer, "num_training_batches", None)
        return int(batches) if isinstance(batches, int) or (
            isinstance(batches, float) and math.isfinite(batches)) else None

    @property
    def stop_training(self) -> bool:
        return bool(self.trainer.should_stop)

    @stop_training.setter
    def stop_training(self, value: bool) -> None:
        self.trainer.should_stop = bool(value)

    # -- parts --------------------------------------------------------------------------------------
    @property
    def optim_wrapper(self) -> Any:
        """An ``OptimWrapper`` (``OptimWrapperDict`` for several) around the Trainer's optimizers;
        for reading (``get_lr()``, ``param_groups``): Lightning runs the updates."""
        optimizers = list(getattr(self.trainer, "optimizers", []) or [])
        key = tuple(id(o) for o in optimizers)
        if self._wrappers[0] != key:
            wrappers = [OptimWrapper(o) for o in optimizers]
            wrapper: Any = None
            if len(wrappers) == 1:
                wrapper = wrappers[0]
            elif wrappers:
                wrapper = OptimWrapperDict(**{f"optimizer_{i}": w for i, w in enumerate(wrappers)})
            self._wrappers = (key, wrapper)
        return self._wrappers[1]

    @property
    def optimizer(self) -> torch.optim.Optimizer | None:
        optimizers = getattr(self.trainer, "optimizers", None) or []
        return optimizers[0] if optimizers else None

    @property
    def param_schedulers(self) -> list[Any]:
        """The trainer's schedulers in MMEngine's shape: each carries ``by_epoch`` (its
        config's ``interval == "epoch"``)."""
        schedulers = []
        for config in getattr(self.trainer, "lr_scheduler_configs", []):
            config.scheduler.by_epoch = config.interval == "epoch"
            schedulers.append(config.scheduler)
        return schedulers

    @property
    def grad_scaler(self) -> Any:
        return getattr(getattr(self.trainer, "precision_plugin", None), "scaler", None)

    @property
    def train_dataloader(self) -> Any:
        return getattr(self.trainer, "train_dataloader", None)

    @property
    def val_dataloader(self) -> Any:
        return getattr(self.trainer, "val_dataloaders", None)

    @property
    def logger(self) -> logging.Logger:
        if self._logger is None:
            self._logger = make_logger(None, main_process=self.is_main_process)
        return self._logger

    @property
    def work_dir(self) -> Path:
        folder = getattr(self.trainer, "log_dir", None) or getattr(
            self.trainer, "default_root_dir", None) or "."
        return Path(folder)

    @property
    def rank(self) -> int:
        return int(getattr(self.trainer, "global_rank", 0))

    @property
    def world_size(self) -> int:
        return int(getattr(self.trainer, "world_size", 1))

    @property
    def is_main_process(self) -> bool:
        return bool(getattr(self.trainer, "is_global_zero", True))

    @property
    def device(self) -> torch.device:
        return torch.device(getattr(self.model, "device", "cpu"))

    def call_hook(self, stage: str, **kwargs: Any) -> None:
        """Call ``stage`` on the hooks this facade runs (MMEngine's name)."""
        self.hooks.call(self, stage, **kwargs)  # type: ignore[arg-type]  # a Runner stand-in

    def save_checkpoint(self, path: Any, **kwargs: Any) -> Path:
        """A Lightning checkpoint at ``path`` (relative paths go in ``work_dir``)."""
        target = Path(path)
        if not target.is_absolute():
            target = self.work_dir / target
        self.trainer.save_checkpoint(str(target))
        return target

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(
            f"a hookline hook inside a Lightning Trainer read runner.{name}, which the Lightning "
            "runner facade does not provide (it has model, epoch, iter, max_epochs, max_iters, "
            "optim_wrapper, optimizer, message_hub, logger, work_dir, stop_training, "
            "train_loop, val_loop); the Trainer itself is runner.trainer")

    def __repr__(self) -> str:
        return f"<LightningRunner epoch={self.epoch if self.trainer else None}>"
