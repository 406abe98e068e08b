"""OptimizerHook: backward, gradient clipping, accumulation, AMP, optimizer step.

Example::

    >>> from hookline.hooks import OptimizerHook
    >>> hook = OptimizerHook(grad_clip={"max_norm": 1.0}, accumulate=4, amp=False)
    >>> hook.triggered_stages()
    ['before_train', 'after_train_iter']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS


@HOOKS.register()
class OptimizerHook(Hook):
    """Runs ``zero_grad``, ``backward`` and ``step`` after each training step.

    Args:
        grad_clip: ``{"max_norm": x}`` (optionally ``"norm_type"``) or
            ``{"max_value": x}``; the gradient norm is logged as ``grad_norm``.
        accumulate: step every ``accumulate`` iterations, averaging the loss
            over the group; the last, shorter group of an epoch is averaged
            over its own size.
        amp: mixed precision: float16 autocast + GradScaler on CUDA, bfloat16
            autocast on CPU.
        loss_scale: ``"dynamic"`` (GradScaler's default) or a fixed float.
    """

    priority = "ABOVE_NORMAL"

    def __init__(self, grad_clip: Mapping[str, Any] | None = None, accumulate: int = 1,
                 amp: bool = False, loss_scale: str | float = "dynamic") -> None:
        if grad_clip is not None:
            grad_clip = dict(grad_clip)
            kinds = {"max_norm", "max_value"} & set(grad_clip)
            extra = set(grad_clip) - {"max_norm", "max_value", "norm_type"}
            if len(kinds) != 1 or extra:
                raise ConfigError(
                    f"grad_clip must be {{'max_norm': x}} (optionally with 'norm_type') or "
                    f"{{'max_value': x}}, got {grad_clip!r}")
        if not isinstance(accumulate, int) or accumulate < 1:
            raise ConfigError(f"accumulate must be an int >= 1, got {accumulate!r}")
        if loss_scale != "dynamic" and not isinstance(loss_scale, (int, float)):
            raise ConfigError(f"loss_scale must be 'dynamic' or a number, got {loss_scale!r}")
        self.grad_clip = grad_clip
        self.accumulate = accumulate
        self.amp = amp
        self.loss_scale = loss_scale
        self._scaler: Any = None

    def before_train(self, runner) -> None:
        if runner.optimizer is None:
            raise ConfigError("OptimizerHook needs an optimizer: pass optimizer= to the Runner, "
                              "or remove the hook with default_hooks={'optimizer': None}")
        if self.amp:
            self._setup_amp(runner)
        runner.optimizer.zero_grad(set_to_none=True)

    def _setup_amp(self, runner) -> None:
        device_type = runner.device.type
        dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
        runner.autocast = lambda: torch.autocast(device_type=device_type, dtype=dtype)
        if device_type == "cuda" and runner.grad_scaler is None:
            if self.loss_scale == "dynamic":
                runner.grad_scaler = torch.amp.GradScaler("cuda")
            else:
                runner.grad_scaler = torch.amp.GradScaler(
                    "cuda", init_scale=float(self.loss_scale), growth_interval=2**31 - 1,
                    backoff_factor=1.0, growth_factor=1.0)
        self._scaler = runner.grad_scaler

    def _group(self, runner, batch_idx: int) -> tuple[int, bool]:
        """(size of the accumulation group this iteration is in, whether it ends it)."""
        n = self.accumulate
        if runner.max_epochs is not None:
            position, total = batch_idx, len(runner.train_dataloader)
        else:
            position, total = runner.iter, runner.max_iters
        start = position - position % n
        size = min(n, total - start)
        return size, position + 1 == start + size

    def after_train_iter(self, runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        loss = outputs["loss"]
        size, last = (1, True) if self.accumulate == 1 else self._group(runner, batch_idx)
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
            scaler.update()
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
