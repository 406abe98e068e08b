"""What a checkpoint holds, and putting it back: the whole state of a run.

A checkpoint is a dict of tensors and plain containers (so it loads with
``weights_only=True``)::

    meta            hookline/torch versions, epoch, iter, batch (position in
                    the epoch), seed, time, config
    state_dict      the model's weights (unwrapped from DDP)
    optimizer       optimizer state
    param_schedulers  one state dict per scheduler
    grad_scaler     AMP GradScaler state, when AMP runs on CUDA
    hooks           {hook.state_key: hook.state_dict()} for hooks with state
    rng             python, numpy, torch and CUDA RNG states
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import torch

import hookline

from .rng import get_rng_state, set_rng_state

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner


def hook_state_keys(runner: Runner) -> dict[str, Any]:
    """Each hook under a stable key: its ``state_key``, with ``.2``, ``.3`` for repeats."""
    keys: dict[str, Any] = {}
    for hook in runner.hooks.hooks:
        key = base = hook.state_key
        count = 1
        while key in keys:
            count += 1
            key = f"{base}.{count}"
        keys[key] = hook
    return keys


def collect(runner: Runner, *, save_optimizer: bool = True) -> dict[str, Any]:
    """The checkpoint dict of ``runner`` as it is now."""
    epoch, batch, iters = runner._position
    checkpoint: dict[str, Any] = {
        "meta": {
            "hookline_version": hookline.__version__,
            "torch_version": str(torch.__version__),
            "epoch": epoch,
            "iter": iters,
            "batch": batch,
            "seed": runner.seed,
            "time": time.strftime("%Y-%m-%d %H:%M:%S"),
            "by_epoch": runner.max_epochs is not None,
            "config": runner.config,
        },
        "state_dict": {k: v.detach().cpu() for k, v in runner.model.state_dict().items()},
        "rng": get_rng_state(),
    }
    if save_optimizer and runner.optimizer is not None:
        checkpoint["optimizer"] = runner.optimizer.state_dict()
        checkpoint["param_schedulers"] = [s.state_dict() for s, _ in runner.param_schedulers]
        if runner.grad_scaler is not None:
            checkpoint["grad_scaler"] = runner.grad_scaler.state_dict()
    hook_states = {}
    for key, hook in hook_state_keys(runner).items():
        state = hook.state_dict()
        if state:
            hook_states[key] = state
    checkpoint["hooks"] = hook_states
    return checkpoint


def apply(runner: Runner, checkpoint: dict[str, Any], *, resume: bool, strict: bool = True
          ) -> None:
    """Load ``checkpoint`` into ``runner``: weights only, or the whole run when ``resume``."""
    missing, unexpected = runner.model.load_state_dict(checkpoint["state_dict"], strict=strict)
    if missing or unexpected:
        runner.logger.warning("checkpoint weights: missing keys %s, unexpected keys %s",
                              list(missing), list(unexpected))
    if not resume:
        return
    meta = checkpoint["meta"]
    if "optimizer" in checkpoint and runner.optimizer is not None:
        runner.optimizer.load_state_dict(checkpoint["optimizer"])
    else:
        runner.logger.warning("checkpoint has no optimizer state: the optimizer starts fresh")
    for (scheduler, _), state in zip(runner.param_schedulers,
                                     checkpoint.get("param_schedulers", [])):
        scheduler.load_state_dict(state)
    if runner.grad_scaler is not None and "grad_scaler" in checkpoint:
        runner.grad_scaler.load_state_dict(checkpoint["grad_scaler"])
    states = checkpoint.get("hooks", {})
    for key, hook in hook_state_keys(runner).items():
        if key in states:
            hook.load_state_dict(states[key])
    unused = sorted(set(states) - set(hook_state_keys(runner)))
    if unused:
        runner.logger.warning("checkpoint holds state for hooks this run does not have: %s",
                              unused)
    if "rng" in checkpoint:
        set_rng_state(checkpoint["rng"])
    runner.epoch = int(meta["epoch"])
    runner.iter = int(meta["iter"])
    runner._resume_batch = int(meta.get("batch", 0)) if runner.max_epochs is not None else 0
    runner._position = (runner.epoch, runner._resume_batch, runner.iter)
