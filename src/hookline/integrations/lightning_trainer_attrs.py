"""What Lightning callbacks read of a Trainer beyond the loop state: the run's data loaders,
precision, the registered checkpoint / early-stopping callbacks, the resumed checkpoint, and
``fit_loop``'s counters; and the one error for what the trainer facade does not provide.

:class:`TrainerAttributes` is a base of
:class:`~hookline.integrations.lightning_trainer.LightningTrainer`:

=================================  ==========================================================
``trainer.``                       in a hookline run
=================================  ==========================================================
``train_dataloader``               ``runner.train_dataloader``
``val_dataloaders``                ``runner.val_dataloader`` (None without one)
``test_dataloaders``               ``runner.test_dataloader``
``datamodule``                     None (a Runner takes loaders, not a ``LightningDataModule``)
``precision``                      Lightning's string: ``"16-mixed"`` / ``"bf16-mixed"`` under
                                   an ``AmpOptimWrapper``, else from the model's parameters'
                                   dtype (``"32-true"``, ``"64-true"``, ``"bf16-true"`` ...)
``checkpoint_callback(s)``         the registered Lightning ``Checkpoint`` callback(s)
``early_stopping_callback(s)``     the registered ``EarlyStopping`` callback(s)
``ckpt_path``                      None, or the ``resume=`` the run resumed from
``fit_loop.max_epochs``,           the run's; ``epoch_progress.current.completed`` is
``fit_loop.epoch_progress``        ``current_epoch``
=================================  ==========================================================

Any other attribute is an ``AttributeError`` that lists what the facade offers.

Example::

    >>> from types import SimpleNamespace
    >>> net = torch.nn.Linear(2, 1)
    >>> attrs = TrainerAttributes()
    >>> attrs.runner = SimpleNamespace(optim_wrapper=None, model=net)
    >>> attrs.precision, attrs.datamodule
    ('32-true', None)
"""

from __future__ import annotations

from typing import Any

import torch

from hookline.engine.hook import Hook

__all__ = ["TrainerAttributes", "lightning_precision"]

_MIXED = {torch.float16: "16-mixed", torch.bfloat16: "bf16-mixed"}
_TRUE = {torch.float32: "32-true", torch.float64: "64-true", torch.float16: "16-true",
         torch.bfloat16: "bf16-true"}


def lightning_precision(runner: Any) -> str:
    """Lightning's ``trainer.precision`` for a hookline run: ``"16-mixed"`` / ``"bf16-mixed"``
    when the optimizer wrapper autocasts (``AmpOptimWrapper``), else ``"<bits>-true"`` from the
    dtype of the model's first floating-point parameter, ``"32-true"`` if none."""
    wrapper: Any = getattr(runner, "optim_wrapper", None)
    wrappers = list(wrapper.values()) if hasattr(wrapper, "values") else [wrapper]
    for inner in wrappers:
        dtype = getattr(inner, "dtype", None)
        if dtype in _MIXED:
            return _MIXED[dtype]
    model = getattr(runner, "model", None)
    if isinstance(model, torch.nn.Module):
        for param in model.parameters():
            if param.is_floating_point():
                return _TRUE.get(param.dtype, "32-true")
    return "32-true"


class _Counts:
    """``fit_loop.epoch_progress.current`` / ``.total``: the epochs Lightning counts as done."""

    def __init__(self, completed: int) -> None:
        self.completed = self.processed = completed

    def __repr__(self) -> str:
        return f"<epoch progress completed={self.completed}>"


class _EpochProgress:
    """``fit_loop.epoch_progress`` (``current`` and ``total`` count the same epochs: a hookline
    run restarts nothing)."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer

    @property
    def current(self) -> _Counts:
        return _Counts(int(self.trainer.current_epoch))

    total = current


class TrainerAttributes:
    """The data, precision and callback attributes of the trainer facade (see the module
    docstring); ``runner``, ``callbacks`` and ``resumed`` are set by the facade."""

    runner: Any = None
    callbacks: list[Any]
    #: whether a checkpoint was resumed in this run (``after_load_checkpoint`` with ``resume=``)
    resumed = False
    datamodule = None

    @property
    def train_dataloader(self) -> Any:
        return self.runner.train_dataloader

    @property
    def val_dataloaders(self) -> Any:
        return self.runner.val_dataloader

    @property
    def test_dataloaders(self) -> Any:
        return self.runner.test_dataloader

    @property
    def precision(self) -> str:
        return lightning_precision(self.runner)

    def _of_class(self, name: str) -> list[Any]:
        from lightning.pytorch import callbacks  # noqa: PLC0415  (a Lightning callback runs)
        cls = getattr(callbacks, name)
        return [c for c in self.callbacks if isinstance(c, cls)]

    @property
    def checkpoint_callbacks(self) -> list[Any]:
        return self._of_class("Checkpoint")

    @property
    def checkpoint_callback(self) -> Any:
        found = self.checkpoint_callbacks
        return found[0] if found else None

    @property
    def early_stopping_callbacks(self) -> list[Any]:
        return self._of_class("EarlyStopping")

    @property
    def early_stopping_callback(self) -> Any:
        found = self.early_stopping_callbacks
        return found[0] if found else None

    @property
    def ckpt_path(self) -> str | None:
        """Where the run resumed from: the Runner's ``resume=`` (a path, or ``"auto"``);
        None when it did not resume (``load_from=`` loads weights only, as Lightning's
        ``ckpt_path`` would not)."""
        if not self.resumed:
            return None
        resume = getattr(self.runner, "resume_from", None)  # the Runner's resume= argument
        return None if resume is None else str(resume)

    def offers(self) -> list[str]:
        """The public attributes of the facade (named by the error on any other)."""
        names = set(dir(type(self))) | set(vars(self))
        return sorted(n for n in names if not n.startswith("_") and n not in _HOOK_NAMES)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        offered = vars(self).get("_offered")
        if offered is None:  # built once: Lightning's code probes attributes with getattr
            offered = vars(self)["_offered"] = ", ".join(self.offers())
        raise AttributeError(
            f"a Lightning callback read trainer.{name}, which the Lightning trainer facade of a "
            f"hookline run does not provide; it has {offered} (the Runner itself is "
            "trainer.runner)")


_HOOK_NAMES = frozenset(dir(Hook)) | {"offers", "calls", "module_metrics", "count_cut_epoch", "of",
                                        "resumed", "cut_epoch_validation"}


class FitLoop:
    """``trainer.fit_loop`` (and ``_logger_connector``): the loop counters Lightning's callbacks
    read."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.epoch_progress = _EpochProgress(trainer)

    @property
    def epoch_loop(self) -> EpochLoop:
        return EpochLoop(self.trainer)

    @property
    def max_epochs(self) -> int:
        return int(self.trainer.max_epochs)

    @property
    def max_steps(self) -> int:
        return int(self.trainer.max_steps)

    @property
    def min_epochs(self) -> int:
        """0, as Lightning's is during ``fit`` when no ``min_epochs`` is given (hookline has
        no minimum: early stopping may stop after any epoch)."""
        return 0

    @property
    def _batches_that_stepped(self) -> int:  # the name LearningRateMonitor reads
        return int(self.trainer.global_step)

    @property
    def should_update_logs(self) -> bool:
        every = self.trainer.log_every_n_steps
        return bool(every > 0 and (self.trainer.global_step + 1) % every == 0)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(
            f"a Lightning callback read trainer.fit_loop.{name}, which the hookline trainer "
            "facade does not provide; it has epoch_progress (current.completed), max_epochs, "
            "max_steps, min_epochs, epoch_loop, should_update_logs")


class EpochLoop(FitLoop):
    """``trainer.fit_loop.epoch_loop``: the fit loop's counters, and the training batch in
    progress (``batch_idx`` in its epoch, ``total_batch_idx`` in the run; -1 before the
    first), as Lightning's ``_TrainingEpochLoop`` gives them."""

    @property
    def batch_idx(self) -> int:
        return int(self.trainer.batch_idx)

    @property
    def total_batch_idx(self) -> int:
        return int(self.trainer.total_batch_idx)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(
            f"a Lightning callback read trainer.fit_loop.epoch_loop.{name}, which the hookline "
            "trainer facade does not provide; it has batch_idx, total_batch_idx, "
            "should_update_logs and the fit loop's counters (epoch_progress, max_epochs, max_steps, "
            "min_epochs)")
