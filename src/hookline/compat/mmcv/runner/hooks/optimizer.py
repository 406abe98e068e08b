"""``mmcv.runner.OptimizerHook``: mmcv's optimizer hook over hookline's optimizer wrapper.

Used as it is, ``OptimizerHook(grad_clip=None)`` configures
``runner.optim_wrapper`` (clipping included) and the wrapper steps right
after the forward, before every ``after_train_iter`` hook. A subclass that
overrides ``after_train_iter`` (the mmcv way: ``runner.outputs["loss"].backward()``,
``runner.optimizer.step()``) takes the update over: the Runner's wrapper then
leaves ``backward`` and ``step`` to it. ``Fp16OptimizerHook`` and
``GradientCumulativeOptimizerHook`` are hookline's (mmcv's arguments).

Example::

    >>> from hookline.compat.mmcv.runner import OptimizerHook
    >>> OptimizerHook(grad_clip=dict(max_norm=35, norm_type=2)).grad_clip
    {'max_norm': 35, 'norm_type': 2}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.engine.optim_wrapper import OptimWrapper
from hookline.hooks import OptimizerHook as _NativeOptimizerHook

from .hook import Hook


class HookDrivenOptimWrapper(OptimWrapper):
    """An optimizer wrapper whose ``update_params`` leaves ``backward`` and ``step`` to an
    mmcv ``OptimizerHook`` subclass (it only counts, for the schedulers)."""

    def update_params(self, loss: torch.Tensor, step_kwargs: dict[str, Any] | None = None,
                      zero_kwargs: dict[str, Any] | None = None) -> None:
        self.before_update.emit(loss)


class OptimizerHook(Hook):
    """``OptimizerHook(grad_clip=None, detect_anomalous_params=False)`` (see the module)."""

    priority: Any = "ABOVE_NORMAL"

    def __init__(self, grad_clip: Mapping[str, Any] | None = None,
                 detect_anomalous_params: bool = False) -> None:
        if detect_anomalous_params:
            raise ConfigError("OptimizerHook detect_anomalous_params is not supported by hookline "
                              "(use hookline.inspect.GradientMonitor to find parameters without "
                              "gradients)")
        self.grad_clip = dict(grad_clip) if grad_clip is not None else None
        self.detect_anomalous_params = detect_anomalous_params
        self._configure = _NativeOptimizerHook(grad_clip=self.grad_clip)

    def drives_update(self) -> bool:
        """Whether a subclass does the backward and step itself (mmcv's way)."""
        cls = type(self)
        return any(getattr(cls, name) is not getattr(OptimizerHook, name)
                   for name in ("after_train_iter", "after_iter"))

    def before_run(self, runner: Any) -> None:
        if not self.drives_update():
            self._configure.before_run(runner.hookline_runner)
            return
        optimizer = runner.optimizer
        if optimizer is None:
            raise ConfigError(f"{type(self).__name__} steps one optimizer; this run has none "
                              "(or several)")
        if not isinstance(runner.optim_wrapper, HookDrivenOptimWrapper):
            runner.optim_wrapper = HookDrivenOptimWrapper(optimizer)

    def clip_grads(self, params: Iterable[torch.nn.Parameter]) -> torch.Tensor | None:
        """Clip the gradients of ``params`` with ``grad_clip`` (``clip_grad_norm_``);
        returns the total norm before clipping."""
        if self.grad_clip is None:
            return None
        grads = [p for p in params if p.requires_grad and p.grad is not None]
        if not grads:
            return None
        return torch.nn.utils.clip_grad_norm_(grads, **self.grad_clip)


__all__ = ["HookDrivenOptimWrapper", "OptimizerHook"]
