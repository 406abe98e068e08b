"""``mmengine.hooks.EMAHook``: MMEngine's EMA hook, with MMEngine's arguments and checkpoints.

The average is a model from ``MODELS`` (``ema_type``, default
:class:`~hookline.compat.mmengine.model.ExponentialMovingAverage`, whose
``momentum`` weighs the *new* value). Validation and test swap the averaged
weights in; a checkpoint holds the averaged weights as ``state_dict`` and the
trained ones as ``ema_state_dict`` (MMEngine's layout), and resuming swaps
them back. Subclasses (mmpretrain's, mmdet's) find MMEngine's attributes:
``src_model``, ``ema_model``, ``ema_cfg``, ``strict_load``, ``begin_iter``,
``begin_epoch``, ``enabled_by_epoch``, ``_swap_ema_parameters()``,
``_swap_ema_state_dict()``, ``_ema_started()``.

Example::

    >>> from hookline.compat.mmengine.hooks import EMAHook
    >>> EMAHook(momentum=0.001, begin_epoch=2).ema_cfg
    {'type': 'ExponentialMovingAverage', 'momentum': 0.001}
"""

from __future__ import annotations

import copy
import itertools
import logging
from collections.abc import Iterable
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.core.registry import check_call
from hookline.engine.hook import DATA_BATCH, Hook

from ..logging import print_log
from ..model import is_model_wrapper
from ..registry import MODELS
from ..runner.checkpoint import load_state_dict


class EMAHook(Hook):
    """Exponential moving average of the weights, evaluated in validation and test.

    Args:
        ema_type: a ``MODELS`` name (``ExponentialMovingAverage``,
            ``MomentumAnnealingEMA``, ``StochasticWeightAverage`` or a registered one).
        strict_load: strict key matching when the average is loaded from a checkpoint.
        begin_iter / begin_epoch: until then the average copies the weights
            (at most one of them).
        **kwargs: arguments of ``ema_type`` (``momentum``, ``interval``, ``update_buffers`` ...).
    """

    priority = "NORMAL"

    def __init__(self, ema_type: str = "ExponentialMovingAverage", strict_load: bool = False,
                 begin_iter: int = 0, begin_epoch: int = 0, **kwargs: Any) -> None:
        for name, value in (("begin_iter", begin_iter), ("begin_epoch", begin_epoch)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"EMAHook {name} must be an int >= 0, got {value!r}")
        if begin_iter and begin_epoch:
            raise ConfigError("EMAHook: give begin_iter or begin_epoch, not both")
        target = MODELS.get(ema_type) if isinstance(ema_type, str) else ema_type
        if target is None or not callable(target):
            raise ConfigError(f"EMAHook ema_type {ema_type!r} is not a registered averaged model "
                              "(ExponentialMovingAverage, MomentumAnnealingEMA, "
                              "StochasticWeightAverage or one registered in MODELS)")
        check_call(target, {"model": None, **kwargs}, f"EMAHook ema_type {ema_type!r}")
        self.strict_load = strict_load
        self.ema_cfg: dict[str, Any] = dict(type=ema_type, **kwargs)
        self.begin_iter = begin_iter
        self.begin_epoch = begin_epoch
        self.enabled_by_epoch = begin_epoch > 0
        self.src_model: torch.nn.Module | None = None
        self.ema_model: Any = None

    def before_run(self, runner: Any) -> None:
        self._build_average(runner)

    def _build_average(self, runner: Any) -> None:
        """Build the averaged model of ``runner.model``, unless this hook already averages
        that model (a checkpoint loaded before ``test()`` / ``val()`` has filled it in)."""
        model = runner.model
        if is_model_wrapper(model):
            model = model.module
        if self.ema_model is not None and self.src_model is model:
            return
        self.src_model = model
        self.ema_model = MODELS.build(self.ema_cfg, default_args=dict(model=model))

    def before_val(self, runner: Any) -> None:
        self._build_average(runner)  # val() / test() without before_run: MMEngine builds first

    def before_test(self, runner: Any) -> None:
        self._build_average(runner)

    def before_train(self, runner: Any) -> None:
        # None: not known yet (a train loader without a length); nothing to check then
        epochs, iters = runner.max_epochs, runner.max_iters
        if self.enabled_by_epoch and epochs is not None and self.begin_epoch > epochs:
            raise ConfigError(f"EMAHook begin_epoch={self.begin_epoch} is after the last epoch "
                              f"({runner.max_epochs})")
        if not self.enabled_by_epoch and iters is not None and self.begin_iter > iters:
            raise ConfigError(f"EMAHook begin_iter={self.begin_iter} is after the last iteration "
                              f"({runner.max_iters})")

    def after_train_iter(self, runner: Any, batch_idx: int, data_batch: DATA_BATCH = None,
                         outputs: dict[str, Any] | None = None) -> None:
        if self._ema_started(runner):
            self.ema_model.update_parameters(self.src_model)
            return
        source = self._model().state_dict()
        with torch.no_grad():
            for name, value in self.ema_model.module.state_dict().items():
                value.copy_(source[name])

    def before_val_epoch(self, runner: Any) -> None:
        self._swap_ema_parameters()

    def after_val_epoch(self, runner: Any, metrics: dict[str, float] | None = None) -> None:
        self._swap_ema_parameters()

    def before_test_epoch(self, runner: Any) -> None:
        self._swap_ema_parameters()

    def after_test_epoch(self, runner: Any, metrics: dict[str, float] | None = None) -> None:
        self._swap_ema_parameters()

    def before_save_checkpoint(self, runner: Any, checkpoint: dict[str, Any]) -> None:
        self._build_average(runner)  # runner.save_checkpoint() before any run
        checkpoint["ema_state_dict"] = self.ema_model.state_dict()
        self._swap_ema_state_dict(checkpoint)

    def after_load_checkpoint(self, runner: Any, checkpoint: dict[str, Any]) -> None:
        self._build_average(runner)  # runner.load_checkpoint() may come before any run
        resuming = getattr(runner, "resume_from", None) is not None
        if "ema_state_dict" in checkpoint and resuming:
            self._swap_ema_state_dict(checkpoint)
            self.ema_model.load_state_dict(checkpoint["ema_state_dict"], strict=self.strict_load)
            return
        if resuming:
            print_log("the checkpoint has no ema_state_dict: EMAHook starts the average from its "
                      "state_dict", logger="current", level=logging.WARNING)
        load_state_dict(self.ema_model.module, copy.deepcopy(checkpoint["state_dict"]),
                        strict=self.strict_load)

    # -- MMEngine's helpers (subclasses call them) ----------------------------------------
    def _model(self) -> torch.nn.Module:
        if self.src_model is None:
            raise RuntimeError("EMAHook: before_run has not built the average yet")
        return self.src_model

    def _pairs(self) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
        ema, src = self.ema_model.module, self._model()
        if self.ema_model.update_buffers:
            return zip(itertools.chain(ema.parameters(), ema.buffers()),
                       itertools.chain(src.parameters(), src.buffers()))
        return zip(ema.parameters(), src.parameters())

    def _swap_ema_parameters(self) -> None:
        """Exchange the values of the model's and the average's parameters."""
        if self.ema_model is None:
            return
        with torch.no_grad():
            for averaged, source in self._pairs():
                kept = averaged.data.clone()
                averaged.data.copy_(source.data)
                source.data.copy_(kept)

    def _swap_ema_state_dict(self, checkpoint: dict[str, Any]) -> None:
        """Exchange ``state_dict`` entries with the ``module.``-prefixed ``ema_state_dict`` ones."""
        model_state, ema_state = checkpoint["state_dict"], checkpoint["ema_state_dict"]
        for key in list(ema_state):
            if key.startswith("module.") and key[7:] in model_state:
                ema_state[key], model_state[key[7:]] = model_state[key[7:]], ema_state[key]

    def _ema_started(self, runner: Any) -> bool:
        """Whether this iteration (or epoch) is at or after ``begin_iter`` (``begin_epoch``)."""
        if self.enabled_by_epoch:
            return bool(runner.epoch + 1 >= self.begin_epoch)
        return bool(runner.iter + 1 >= self.begin_iter)

    def __repr__(self) -> str:
        return f"EMAHook({self.ema_cfg}, begin_iter={self.begin_iter}, begin_epoch={self.begin_epoch})"


__all__ = ["EMAHook"]
