"""What the Lightning ``trainer`` facade of a hookline run is made of: its ``state``,
``strategy`` and logger, and the ``pl_module`` around the model (the loop counters and
data attributes: :mod:`.lightning_trainer_attrs`).

Example::

    >>> from types import SimpleNamespace
    >>> strategy = Strategy(SimpleNamespace(device="cpu"))
    >>> strategy.root_device, strategy.broadcast(True), strategy.reduce_boolean_decision(False)
    ('cpu', True, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError

if TYPE_CHECKING:
    from .lightning_trainer import LightningTrainer

__all__ = ["RunLogger", "State", "Strategy", "make_module"]


class State:
    """``trainer.state``: ``fn`` ("fit", "validate", "test") and ``stage`` ("train" ...)."""

    def __init__(self) -> None:
        self.fn, self.stage = "fit", "train"


class Strategy:
    """What callbacks ask of ``trainer.strategy`` on one process of a hookline run."""

    def __init__(self, runner: Any, trainer: LightningTrainer | None = None) -> None:
        self.runner = runner
        self.trainer = trainer

    @property
    def _lightning_optimizers(self) -> list[torch.optim.Optimizer]:  # the name Lightning reads
        """What ``LightningModule.optimizers()`` reads: the run's optimizers, as they are (hookline
        steps them; no ``LightningOptimizer`` wrapper)."""
        return list(self.trainer.optimizers) if self.trainer is not None else []

    @property
    def root_device(self) -> torch.device:
        device: torch.device = self.runner.device
        return device

    def broadcast(self, obj: Any, src: int = 0) -> Any:
        return obj  # every rank of a hookline run takes the same stop decisions

    def reduce_boolean_decision(self, decision: bool, all: bool = True) -> bool:
        return decision

    def barrier(self, name: str | None = None) -> None:
        return None

    def reduce(self, value: Any, *args: Any, **kwargs: Any) -> Any:
        return value


class RunLogger:
    """``trainer.logger``: metrics go to ``runner.visualizer`` (``vis_data/scalars.json``) and
    ``trainer.logged_metrics``."""

    name = "hookline"
    version = 0

    def __init__(self, trainer: LightningTrainer) -> None:
        self.trainer = trainer

    @property
    def save_dir(self) -> str:
        return self.trainer.log_dir

    log_dir = save_dir

    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        self.trainer.logged_metrics.update(metrics)
        runner = self.trainer.runner
        if runner is not None:
            runner.visualizer.add_scalars(dict(metrics), step=int(step or 0))

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        return None

    @property
    def experiment(self) -> Any:
        """The run's TensorBoard ``SummaryWriter`` (what Lightning's ``TensorBoardLogger``
        gives): the writer of the Runner's ``TensorboardLoggerHook``, or of its visualizer's
        ``TensorboardVisBackend``; a writer that writes nothing on ranks other than 0."""
        runner = self.trainer.runner
        for hook in runner.hooks.hooks:
            if type(hook).__name__ == "TensorboardLoggerHook":
                writer = hook.summary_writer(runner)  # made on first use; None off the main process
                return writer if writer is not None else _NoWriter()
        backend = runner.visualizer.get_backend("TensorboardVisBackend")
        if backend is not None:
            return backend.experiment if runner.is_main_process else _NoWriter()
        raise AttributeError(
            "trainer.logger.experiment (a TensorBoard SummaryWriter) needs TensorBoard in the "
            "hookline run: add hookline's TensorboardLoggerHook to the Runner's hooks "
            "({'type': 'TensorboardLoggerHook'}), and trainer.logger.experiment is its writer. "
            "Without it, log scalars with trainer.logger.log_metrics({...}, step) or "
            "pl_module.log(...) (they reach runner.visualizer: vis_data/scalars.json). "
            "trainer.logger has: name, version, save_dir, log_dir, log_metrics, "
            "log_hyperparams, save, finalize")

    def save(self) -> None:
        return None

    def finalize(self, status: str) -> None:
        return None


class _NoWriter:
    """A ``SummaryWriter`` of a rank that does not write (Lightning's ``DummyExperiment``)."""

    def __getattr__(self, name: str) -> Any:
        def nothing(*args: Any, **kwargs: Any) -> None:
            return None
        return nothing


def make_module(runner: Any, trainer: LightningTrainer) -> Any:
    """A ``LightningModule`` around ``runner.model`` whose ``trainer`` is ``trainer``."""
    import lightning.pytorch as pl  # noqa: PLC0415  (a Lightning callback is being registered)

    class HooklineModule(pl.LightningModule):
        """``runner.model`` as Lightning's callbacks expect a module to be."""

        def __init__(self) -> None:
            super().__init__()
            self.module = runner.model
            self.automatic_optimization = not hasattr(runner.model, "train_step")

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return self.module(*args, **kwargs)

        @property  # type: ignore[override]
        def training(self) -> bool:
            """The model's mode: False while the Runner validates (``train()`` / ``eval()``
            on this module set the model's, as on any parent module)."""
            module = self.__dict__["_modules"].get("module")
            return bool(module.training) if module is not None else True

        @training.setter
        def training(self, mode: bool) -> None:
            module = self.__dict__.get("_modules", {}).get("module")
            if module is not None:
                module.training = mode

        @property
        def device(self) -> torch.device:  # type: ignore[override]
            device: torch.device = runner.device
            return device

        def log(self, name: str, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
            """While the run holds the module, ``log`` is the run's (as a LightningModule's
            ``self.log``: ``LightningModuleHook``); this is called outside it."""
            raise ConfigError(f"pl_module.log({name!r}, ...) was called outside a training, "
                              "validation or test stage of the hookline run (Lightning refuses "
                              "it there too)")

        def __getattr__(self, name: str) -> Any:
            try:
                return super().__getattr__(name)
            except AttributeError:
                if name == "module":
                    raise
                return getattr(super().__getattr__("module"), name)

    module = HooklineModule()
    module.trainer = trainer  # type: ignore[assignment]  # the facade stands in for a Trainer
    return module
