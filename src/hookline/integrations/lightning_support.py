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

    def save(self) -> None:
        return None

    def finalize(self, status: str) -> None:
        return None


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

        def log(self, name: str, value: Any, *args: Any,  # type: ignore[override]
                **kwargs: Any) -> None:
            value = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
            trainer.callback_metrics[name] = value.detach()
            trainer.logged_metrics[name] = value.detach()

        def log_dict(self, dictionary: Mapping[str, Any], *args: Any,  # type: ignore[override]
                     **kwargs: Any) -> None:
            for name, value in dictionary.items():
                self.log(name, value)

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
