"""``mmcv.runner.OptimizerHook`` and the gradient-accumulating and AMP optimizer hooks.

Used as it is, ``OptimizerHook(grad_clip=None)`` configures
``runner.optim_wrapper`` (clipping included) and the wrapper steps right
after the forward, before every ``after_train_iter`` hook; with ``grad_clip``
the norm it clipped goes to ``runner.log_buffer`` as ``grad_norm``, as mmcv
logs it. A subclass that overrides ``after_train_iter`` (the mmcv way:
``runner.outputs["loss"].backward()``, ``runner.optimizer.step()``), or
``clip_grads`` while ``grad_clip`` is set, takes the update over: the
Runner's wrapper then leaves ``backward`` and ``step`` to the hook, and
``OptimizerHook.after_train_iter`` (reached through ``super()``, or called
because only ``clip_grads`` is overridden) does mmcv's update: ``zero_grad``,
``backward``, ``clip_grads`` (its norm into ``log_buffer``), ``step``.

``GradientCumulativeOptimizerHook`` is mmcv's, done the same way: groups of
``cumulative_iters`` counted over the run's iterations (not per epoch), the
loss divided by ``cumulative_iters``, or by the remainder in the last, shorter
group. ``Fp16OptimizerHook`` is hookline's (``AmpOptimWrapper``) under mmcv's
arguments; a subclass of it cannot do the update itself (a ``ConfigError``).

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
from hookline.engine.checks import positive_int
from hookline.engine.optim_wrapper import OptimWrapper
from hookline.hooks import Fp16OptimizerHook as _NativeFp16OptimizerHook
from hookline.hooks import OptimizerHook as _NativeOptimizerHook

from .hook import Hook

#: torch's concrete BatchNorm layers (mmcv matched the private ``_BatchNorm`` base)
_BATCH_NORMS = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d,
                torch.nn.SyncBatchNorm)


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
        """Whether this hook does the backward and step itself (mmcv's way): its class
        overrides ``after_train_iter``, or ``clip_grads`` with ``grad_clip`` set."""
        cls = type(self)
        return cls.after_train_iter is not OptimizerHook.after_train_iter or (
            self.grad_clip is not None and cls.clip_grads is not OptimizerHook.clip_grads)

    def get_triggered_stages(self) -> list[str]:
        """``after_train_iter`` only where it updates or logs ``grad_norm``."""
        stages = super().get_triggered_stages()
        if self.drives_update() or self.grad_clip is not None:
            return stages
        return [stage for stage in stages if stage != "after_train_iter"]

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

    def after_train_iter(self, runner: Any) -> None:
        """mmcv's update when this hook drives it; else the wrapper's clipped norm to
        ``runner.log_buffer`` (``grad_norm``), as mmcv logged it."""
        if not isinstance(runner.optim_wrapper, HookDrivenOptimWrapper):
            self._log_wrapper_norm(runner)
            return
        runner.optimizer.zero_grad()
        runner.outputs["loss"].backward()
        self._clip_and_log(runner)
        runner.optimizer.step()

    def _clip_and_log(self, runner: Any) -> None:
        """mmcv: ``clip_grads(runner.model.parameters())`` when ``grad_clip`` is set, its norm
        into ``runner.log_buffer`` (weighted by ``num_samples``) and the message hub."""
        if self.grad_clip is None:
            return
        grad_norm = self.clip_grads(runner.model.parameters())
        if grad_norm is not None:
            runner.log_buffer.update({"grad_norm": float(grad_norm)},
                                     runner.outputs["num_samples"])
            runner.message_hub.update("train/grad_norm", grad_norm)

    @staticmethod
    def _log_wrapper_norm(runner: Any) -> None:
        hub = runner.message_hub
        if "train/grad_norm" in hub:
            runner.log_buffer.update({"grad_norm": hub.get_scalar("train/grad_norm").recent(1)[-1]},
                                     runner.outputs["num_samples"])


class GradientCumulativeOptimizerHook(OptimizerHook):
    """mmcv's ``GradientCumulativeOptimizerHook(cumulative_iters=1, grad_clip=None)``: steps
    every ``cumulative_iters`` iterations of the run (see the module docstring)."""

    def __init__(self, cumulative_iters: int = 1, grad_clip: Mapping[str, Any] | None = None,
                 detect_anomalous_params: bool = False) -> None:
        super().__init__(grad_clip=grad_clip, detect_anomalous_params=detect_anomalous_params)
        self.cumulative_iters: int = positive_int(cumulative_iters, "cumulative_iters",
                                                  owner=type(self).__name__)
        self.divisible_iters = 0
        self.remainder_iters = 0
        self.initialized = False

    def before_run(self, runner: Any) -> None:
        self.initialized = False  # counted again for each run, from its max_iters
        super().before_run(runner)

    @staticmethod
    def has_batch_norm(module: torch.nn.Module) -> bool:
        """Whether ``module`` has BatchNorm layers (mmcv's ``_BatchNorm`` subclasses)."""
        return any(isinstance(m, _BATCH_NORMS) for m in module.modules())

    def _init(self, runner: Any) -> None:
        """mmcv's: warn about a resume inside a group and BatchNorm; the last group's size."""
        max_iters = runner.max_iters
        if max_iters is None:
            raise ConfigError(f"{type(self).__name__} divides the last group by the iterations "
                              "left, but this run's length is unknown (a train dataloader "
                              "without a length and max_epochs): train with max_iters")
        if runner.iter % self.cumulative_iters != 0:
            runner.logger.warning(
                "%s: the run resumes at iteration %d, inside a group of %d: the gradients the "
                "group had gathered before the checkpoint are not in it",
                type(self).__name__, runner.iter, self.cumulative_iters)
        if self.has_batch_norm(runner.model) and self.cumulative_iters > 1:
            runner.logger.warning("%s: BatchNorm layers see each batch alone, not the "
                                  "accumulated group: results can differ a little from one "
                                  "big batch", type(self).__name__)
        self.divisible_iters = max_iters // self.cumulative_iters * self.cumulative_iters
        self.remainder_iters = max_iters - self.divisible_iters
        self.initialized = True

    def _get_loss_factor(self, runner: Any) -> int:
        """``cumulative_iters``, or the remainder in the last group (mmcv warns every
        iteration there; this warns once)."""
        if runner.iter < runner.max_iters - self.remainder_iters:
            return self.cumulative_iters
        if runner.iter == runner.max_iters - self.remainder_iters:
            runner.logger.warning(
                "%s: the last %d iterations make a shorter group than %d: their loss is divided "
                "by %d", type(self).__name__, self.remainder_iters, self.cumulative_iters,
                self.remainder_iters)
        return self.remainder_iters

    def after_train_iter(self, runner: Any) -> None:
        """mmcv's: backward of ``loss / factor``; clip, step and ``zero_grad`` at the end of
        a group (``every_n_iters`` or the last iteration)."""
        if not self.initialized:
            self._init(runner)
        loss = runner.outputs["loss"] / self._get_loss_factor(runner)
        loss.backward()
        if self.every_n_iters(runner, self.cumulative_iters) or self.is_last_iter(runner):
            self._clip_and_log(runner)
            runner.optimizer.step()
            runner.optimizer.zero_grad()


class Fp16OptimizerHook(_NativeFp16OptimizerHook):
    """mmcv's ``Fp16OptimizerHook(grad_clip=None, coalesce=True, bucket_size_mb=-1,
    loss_scale=512., distributed=True)``: hookline's AMP wrapper does the update, so a
    subclass overriding ``after_train_iter`` or ``clip_grads`` is a :class:`ConfigError`."""

    def before_run(self, runner: Any) -> None:
        cls = type(self)
        own = [name for name in ("after_train_iter", "clip_grads")
               if getattr(cls, name, None) is not getattr(Fp16OptimizerHook, name, None)]
        if own:
            raise ConfigError(
                f"{cls.__name__} overrides {', '.join(own)}: hookline's Fp16OptimizerHook hands "
                "the AMP update to AmpOptimWrapper and never calls them; subclass OptimizerHook "
                "(its after_train_iter does the update) or drop the override")
        super().before_run(runner)


__all__ = ["Fp16OptimizerHook", "GradientCumulativeOptimizerHook", "HookDrivenOptimWrapper",
           "OptimizerHook"]
