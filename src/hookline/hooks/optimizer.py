"""OptimizerHook: backward, gradient clipping, accumulation, AMP, optimizer step.

``Fp16OptimizerHook`` and ``GradientCumulativeOptimizerHook`` are mmcv's
names for the same hook with AMP on, or with accumulation.

Example::

    >>> from hookline.hooks import OptimizerHook
    >>> hook = OptimizerHook(grad_clip={"max_norm": 1.0}, accumulate=4, amp=False)
    >>> hook.triggered_stages()
    ['before_run', 'before_train', 'after_train_iter']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

_SCALER_KEYS = ("init_scale", "growth_factor", "backoff_factor", "growth_interval")


def _check_loss_scale(loss_scale: Any) -> None:
    if loss_scale == "dynamic":
        return
    if isinstance(loss_scale, Mapping):
        extra = sorted(set(loss_scale) - set(_SCALER_KEYS))
        if extra:
            raise ConfigError(f"loss_scale dict takes GradScaler arguments {list(_SCALER_KEYS)}, "
                              f"got unknown {extra}")
        return
    if isinstance(loss_scale, bool) or not isinstance(loss_scale, (int, float)) or loss_scale <= 0:
        raise ConfigError("loss_scale must be 'dynamic', a positive number (static scale) or a "
                          f"dict of GradScaler arguments {list(_SCALER_KEYS)}, got {loss_scale!r}")


@HOOKS.register()
class OptimizerHook(Hook):
    """Runs ``backward``, optional clipping, ``step`` and ``zero_grad`` after each training step.

    Args:
        grad_clip: ``{"max_norm": x}`` (optionally ``"norm_type"``) or
            ``{"max_value": x}``; the total gradient norm (before clipping) is
            recorded as ``train/grad_norm`` and logged by the LoggerHook. With
            a GradScaler, gradients are unscaled before clipping.
        accumulate: step every ``accumulate`` iterations, averaging the loss
            over the group; the last, shorter group of an epoch (or of the
            run, when it is iteration-based) is averaged over its own size.
            Gradients of an unfinished group go into checkpoints, so a run
            resumed in the middle of a group continues exactly.
        amp: mixed precision: float16 autocast + ``torch.amp.GradScaler`` on
            CUDA (its state is saved in checkpoints as ``grad_scaler``),
            bfloat16 autocast without a scaler on CPU.
        loss_scale: ``"dynamic"`` (GradScaler's growing/backing-off scale), a
            number (a static scale: steps with inf/NaN gradients are skipped
            and the scale stays), or a dict of GradScaler arguments
            (``init_scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``).

    Example::

        >>> hook = OptimizerHook(grad_clip={"max_norm": 35, "norm_type": 2})
        >>> hook.grad_clip
        {'max_norm': 35, 'norm_type': 2}
    """

    priority = "ABOVE_NORMAL"

    def __init__(self, grad_clip: Mapping[str, Any] | None = None, accumulate: int = 1,
                 amp: bool = False, loss_scale: str | float | Mapping = "dynamic") -> None:
        if grad_clip is not None:
            if not isinstance(grad_clip, Mapping):
                raise ConfigError(f"grad_clip must be a dict such as {{'max_norm': 1.0}}, "
                                  f"got {grad_clip!r}")
            grad_clip = dict(grad_clip)
            kinds = {"max_norm", "max_value"} & set(grad_clip)
            extra = set(grad_clip) - {"max_norm", "max_value", "norm_type"}
            if len(kinds) != 1 or extra or ("norm_type" in grad_clip and "max_value" in grad_clip):
                raise ConfigError(
                    f"grad_clip must be {{'max_norm': x}} (optionally with 'norm_type') or "
                    f"{{'max_value': x}}, got {grad_clip!r}")
        if not isinstance(accumulate, int) or isinstance(accumulate, bool) or accumulate < 1:
            raise ConfigError(f"accumulate must be an int >= 1, got {accumulate!r}")
        _check_loss_scale(loss_scale)
        self.grad_clip = grad_clip
        self.accumulate = accumulate
        self.amp = bool(amp)
        self.loss_scale = loss_scale
        self._scaler: Any = None
        self._static_scale: float | None = None
        self._optimizer: torch.optim.Optimizer | None = None
        self._pending: list | None = None

    # -- setup ----------------------------------------------------------------------------
    def before_run(self, runner) -> None:
        """Set up AMP before a checkpoint is resumed, so the GradScaler state is restored."""
        if self.amp:
            self._setup_amp(runner)

    def before_train(self, runner) -> None:
        if runner.optimizer is None:
            raise ConfigError("OptimizerHook needs an optimizer: pass optimizer= to the Runner, "
                              "or remove the hook with default_hooks={'optimizer': None}")
        self._optimizer = runner.optimizer
        runner.optimizer.zero_grad(set_to_none=True)
        first = runner._resume_batch if runner.max_epochs is not None else 0
        self._plan_grad_sync(runner, first, 0)
        if self._pending is not None:
            self._restore_pending(runner)

    def _setup_amp(self, runner) -> None:
        device_type = runner.device.type
        dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
        runner.autocast = lambda: torch.autocast(device_type=device_type, dtype=dtype)
        if device_type == "cuda" and runner.grad_scaler is None:
            runner.grad_scaler = self._make_scaler()
        self._scaler = runner.grad_scaler
        if isinstance(self.loss_scale, (int, float)) and not isinstance(self.loss_scale, bool):
            self._static_scale = float(self.loss_scale)

    def _make_scaler(self) -> torch.amp.GradScaler:
        if self.loss_scale == "dynamic":
            return torch.amp.GradScaler("cuda")
        if isinstance(self.loss_scale, Mapping):
            return torch.amp.GradScaler("cuda", **dict(self.loss_scale))
        # static: the scale is put back after every update, so it never grows or backs off
        return torch.amp.GradScaler("cuda", init_scale=float(self.loss_scale))

    # -- the step ---------------------------------------------------------------------------
    def _group(self, runner, batch_idx: int, ahead: int = 0) -> tuple[int, bool]:
        """(size of the accumulation group an iteration is in, whether it ends it), for this
        iteration or, with ``ahead=1``, the next one."""
        n = self.accumulate
        if runner.max_epochs is not None:
            position, total = batch_idx + ahead, len(runner.train_dataloader)
            if position >= total:  # the next iteration starts a new epoch
                position -= total
        else:
            position, total = runner.iter + ahead, runner.max_iters
        start = position - position % n
        size = min(n, total - start)
        return size, position + 1 == start + size

    def _plan_grad_sync(self, runner, batch_idx: int, ahead: int) -> None:
        """Under DDP, all-reduce gradients only on the last micro-batch of a group: the Runner
        runs the other forwards under ``no_sync()`` when ``runner.grad_sync`` is False."""
        if self.accumulate > 1 and runner.world_size > 1:
            runner.grad_sync = self._group(runner, batch_idx, ahead)[1]

    def after_train_iter(self, runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        loss = outputs["loss"]
        size, last = (1, True) if self.accumulate == 1 else self._group(runner, batch_idx)
        if self.accumulate > 1:
            self._plan_grad_sync(runner, batch_idx, 1)
            if size > 1:
                loss = loss / size
        scaler = self._scaler
        if scaler is not None:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        if not last:
            return
        optimizer = runner.optimizer
        if self.grad_clip is not None:
            if scaler is not None:
                scaler.unscale_(optimizer)
            runner.message_hub.update("train/grad_norm", self._clip(optimizer))
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update(self._static_scale)
        else:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def _clip(self, optimizer: torch.optim.Optimizer) -> torch.Tensor:
        params = [p for group in optimizer.param_groups for p in group["params"]
                  if p.grad is not None]
        if "max_norm" in self.grad_clip:
            return torch.nn.utils.clip_grad_norm_(
                params, self.grad_clip["max_norm"], self.grad_clip.get("norm_type", 2.0))
        norm = torch.nn.utils.get_total_norm([p.grad for p in params])
        torch.nn.utils.clip_grad_value_(params, self.grad_clip["max_value"])
        return norm

    # -- state: gradients of an unfinished accumulation group ----------------------------------
    def _params(self) -> list[torch.nn.Parameter]:
        if self._optimizer is None:
            return []
        return [p for group in self._optimizer.param_groups for p in group["params"]]

    def state_dict(self) -> dict:
        if self.accumulate == 1:
            return {}
        grads = [p.grad for p in self._params()]
        if all(g is None for g in grads):
            return {}
        return {"pending_grads": [None if g is None else g.detach().clone() for g in grads]}

    def load_state_dict(self, state: dict) -> None:
        self._pending = state.get("pending_grads")

    def _restore_pending(self, runner) -> None:
        pending, self._pending = self._pending, None
        params = self._params()
        if len(pending) != len(params):
            runner.logger.warning("OptimizerHook: the checkpoint holds gradients of %d parameters, "
                                  "the optimizer has %d: the unfinished accumulation group is "
                                  "dropped", len(pending), len(params))
            return
        for param, grad in zip(params, pending):
            param.grad = None if grad is None else grad.to(param.device, param.dtype)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(grad_clip={self.grad_clip}, accumulate={self.accumulate}, "
                f"amp={self.amp}, loss_scale={self.loss_scale!r})")


@HOOKS.register()
class Fp16OptimizerHook(OptimizerHook):
    """mmcv's AMP optimizer hook: :class:`OptimizerHook` with ``amp=True``.

    ``loss_scale`` defaults to mmcv's static 512.0; pass ``"dynamic"`` for a
    growing/backing-off scale, or a dict of GradScaler arguments. On CPU there
    is no GradScaler: autocast runs in bfloat16 and ``loss_scale`` is unused.
    ``coalesce``, ``bucket_size_mb`` and ``distributed`` are accepted so that
    mmcv configs load, and have no effect: DistributedDataParallel already
    all-reduces the gradients in buckets.

    Example::

        >>> hook = Fp16OptimizerHook(loss_scale="dynamic", grad_clip={"max_norm": 1.0})
        >>> hook.amp, hook.loss_scale
        (True, 'dynamic')
    """

    def __init__(self, grad_clip: Mapping[str, Any] | None = None, coalesce: bool = True,
                 bucket_size_mb: int = -1, loss_scale: str | float | Mapping = 512.0,
                 distributed: bool = True, accumulate: int = 1) -> None:
        super().__init__(grad_clip=grad_clip, accumulate=accumulate, amp=True,
                         loss_scale=loss_scale)


@HOOKS.register()
class GradientCumulativeOptimizerHook(OptimizerHook):
    """mmcv's name for :class:`OptimizerHook` with ``accumulate=cumulative_iters``.

    Example::

        >>> GradientCumulativeOptimizerHook(cumulative_iters=4).accumulate
        4
    """

    def __init__(self, cumulative_iters: int = 1, grad_clip: Mapping[str, Any] | None = None,
                 amp: bool = False, loss_scale: str | float | Mapping = "dynamic") -> None:
        super().__init__(grad_clip=grad_clip, accumulate=cumulative_iters, amp=amp,
                         loss_scale=loss_scale)
