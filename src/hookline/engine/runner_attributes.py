"""What hooks read on a Runner, under MMEngine's names: counters, lengths, loaders, optimizer.

Every attribute here is a view: the run's position lives in ``runner.state``
(:class:`~hookline.engine.run_state.RunState`), the lengths and loaders in the
loops, the optimizer in ``runner.optim_wrapper``. :class:`~hookline.engine.Runner`
inherits them; nothing here stores state of its own.

Example::

    >>> import tempfile, torch
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> from hookline.engine import Runner
    >>> data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    >>> runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
    ...                 loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=3,
    ...                 train_dataloader=DataLoader(data, batch_size=8),
    ...                 work_dir=tempfile.mkdtemp(), default_hooks={"logger": None})
    >>> runner.max_epochs, runner.max_iters, runner.by_epoch, runner.epoch
    (3, 12, True, 0)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .checkpoint.settings import optimizer_settings

if TYPE_CHECKING:  # pragma: no cover
    from .evaluator import Evaluator
    from .loops import TrainLoop, ValLoop
    from .message_hub import MessageHub
    from .optim_wrapper import OptimWrapperLike
    from .run_state import RunState


class LogProcessorView:
    """MMEngine's ``runner.log_processor``, the attributes hooks read, from the run's logger.

    ``window_size`` is the ``LoggerHook``'s ``interval`` (the values it averages;
    MMEngine's default 10 without one), ``by_epoch`` its ``by_epoch`` (else the
    run's); ``custom_cfg``, ``num_digits``, ``log_with_hierarchy`` and
    ``mean_pattern`` are MMEngine's defaults, which hookline's logger follows.
    The log lines themselves are the LoggerHook's: no ``get_log_after_iter``.

    Example::

        >>> from types import SimpleNamespace
        >>> class LoggerHook:
        ...     interval, by_epoch = 50, False
        >>> runner = SimpleNamespace(hooks=SimpleNamespace(hooks=[LoggerHook()]), by_epoch=True)
        >>> view = LogProcessorView(runner)
        >>> view.window_size, view.by_epoch, view.num_digits
        (50, False, 4)
    """

    custom_cfg: list[dict[str, Any]] = []
    num_digits = 4
    log_with_hierarchy = False
    mean_pattern = re.compile(r".*(loss|time|data_time|grad_norm).*")

    def __init__(self, runner: Any) -> None:
        self._runner = runner

    def _logger_hook(self) -> Any:
        for hook in self._runner.hooks.hooks:
            if any(cls.__name__ == "LoggerHook" for cls in type(hook).__mro__):
                return hook
        return None

    @property
    def window_size(self) -> int:
        """The logger's interval (10 without a LoggerHook, MMEngine's default)."""
        return int(getattr(self._logger_hook(), "interval", 10))

    @property
    def by_epoch(self) -> bool:
        """Whether log lines count epochs: the logger's ``by_epoch``, else the run's."""
        return bool(getattr(self._logger_hook(), "by_epoch", self._runner.by_epoch))


class RunnerAttributes:
    """The read side of a Runner (see the module docstring)."""

    state: RunState
    has_loaded: bool
    train_loop: TrainLoop | None
    val_loop: ValLoop | None
    test_loop: ValLoop | None
    message_hub: MessageHub
    rank: int
    world_size: int
    model: torch.nn.Module
    work_dir: Path
    timestamp: str
    _train_dataloader: Any
    _optim_wrapper: OptimWrapperLike | None
    _train_step: Any

    @property
    def _has_loaded(self) -> bool:
        """MMEngine's name of :attr:`has_loaded` (YOLOAutoAnchorHook reads it)."""
        return self.has_loaded

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def iter(self) -> int:
        return self.state.iter

    @property
    def by_epoch(self) -> bool:
        """Whether training counts epochs (``max_epochs``) rather than iterations."""
        return self.state.by_epoch

    @property
    def max_epochs(self) -> int | None:
        return self.train_loop.max_epochs if self.train_loop is not None else None

    @property
    def max_iters(self) -> int | None:
        return self.train_loop.max_iters if self.train_loop is not None else None

    @property
    def val_interval(self) -> int | None:
        return self.train_loop.val_interval if self.train_loop is not None else None

    @property
    def stop_training(self) -> bool:
        return self.state.stop_training

    @stop_training.setter
    def stop_training(self, value: bool) -> None:
        self.state.stop_training = bool(value)

    @property
    def train_dataloader(self) -> Any:
        return self.train_loop.dataloader if self.train_loop is not None else self._train_dataloader

    @property
    def val_dataloader(self) -> Any:
        return self.val_loop.dataloader if self.val_loop is not None else None

    @property
    def test_dataloader(self) -> Any:
        return self.test_loop.dataloader if self.test_loop is not None else None

    @property
    def optim_wrapper(self) -> OptimWrapperLike | None:
        """The :class:`~hookline.engine.OptimWrapper` (or ``OptimWrapperDict``) of the run."""
        return self._optim_wrapper

    @optim_wrapper.setter
    def optim_wrapper(self, wrapper: OptimWrapperLike | None) -> None:
        if wrapper is not None:
            wrapper.message_hub = self.message_hub
        self._optim_wrapper = wrapper
        self._train_step = None
        #: the optimizer's settings as this run configured them (checkpoints keep them: a
        #: resume compares them with its own configuration, not with rates a schedule moved)
        self.optimizer_settings = optimizer_settings(wrapper.state_dict()) \
            if wrapper is not None else {}

    @property
    def optimizer(self) -> torch.optim.Optimizer | None:
        """The optimizer of a single-optimizer run (``optim_wrapper.optimizer``)."""
        return getattr(self._optim_wrapper, "optimizer", None)

    @property
    def grad_scaler(self) -> torch.amp.GradScaler | None:
        """The AMP GradScaler (``optim_wrapper.loss_scaler``), when float16 AMP runs on CUDA."""
        return getattr(self._optim_wrapper, "loss_scaler", None)

    @property
    def is_main_process(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """Whether several processes train together (MMEngine's ``runner.distributed``)."""
        return self.world_size > 1

    @property
    def model_name(self) -> str:
        """The model's class name (MMEngine's ``runner.model_name``)."""
        return type(self.model).__name__

    @property
    def log_dir(self) -> Path:
        """``work_dir/<timestamp>``, this run's own folder (MMEngine's ``runner.log_dir``;
        ``vis_data`` goes there): made when first asked for, so a hook can write into it."""
        folder = Path(self.work_dir) / self.timestamp
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @property
    def log_processor(self) -> LogProcessorView:
        """MMEngine's ``runner.log_processor`` attributes (``window_size``, ``by_epoch`` ...),
        read from the run's LoggerHook (:class:`LogProcessorView`)."""
        return LogProcessorView(self)

    @property
    def val_evaluator(self) -> Evaluator | None:
        """The validation loop's evaluator (MMEngine's ``runner.val_evaluator``)."""
        return self.val_loop.evaluator if self.val_loop is not None else None

    @property
    def test_evaluator(self) -> Evaluator | None:
        """The test loop's evaluator (MMEngine's ``runner.test_evaluator``)."""
        return self.test_loop.evaluator if self.test_loop is not None else None

    def _live_scalar(self, key: str) -> float | None:
        """``train/lr`` (first param group), ``train/momentum``, ``train/<name>.lr`` ...: the
        optimizer's value now, for the message hub (see ``MessageHub.live_scalar``)."""
        wrapper = self._optim_wrapper
        if wrapper is None or not key.startswith("train/"):
            return None
        name = key[len("train/"):]
        for values in (wrapper.get_lr(), wrapper.get_momentum()):
            if values.get(name):
                return float(values[name][0])
        return None

    def _live_info(self) -> dict[str, Any]:
        """What ``message_hub.get_info`` reports live (MMEngine's RuntimeInfoHook keys; an
        iteration-based run reports ``max_epochs`` 1, as MMEngine's IterBasedTrainLoop)."""
        max_epochs = self.max_epochs
        if self.train_loop is not None and not self.by_epoch:
            max_epochs = 1
        return {"epoch": self.epoch, "iter": self.iter, "max_epochs": max_epochs,
                "max_iters": self.max_iters}
