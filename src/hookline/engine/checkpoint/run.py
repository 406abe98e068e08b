"""What a checkpoint holds, and putting it back: the whole state of a run.

A checkpoint is a dict of tensors and plain containers (so it loads with
``weights_only=True``)::

    meta            hookline/torch versions, epoch, iter, batch (position in
                    the epoch), stop_training, seed, time, config
    state_dict      the model's weights (unwrapped from DDP)
    optimizer       ``optim_wrapper.state_dict()``: the optimizer's state (with
                    ``loss_scaler`` under float16 AMP; one entry per name for
                    several optimizers), MMEngine's layout
    pending_grads   gradients of an unfinished accumulation group
    param_schedulers  one state dict per scheduler
    hooks           {hook.state_key: hook.state_dict()} for hooks with state
    rng             python, numpy, torch and CUDA RNG states
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import distributed
from ..rng import get_rng_state, set_rng_state
from .atomic import write_checkpoint
from .content import make_meta, serialize
from .loading import find_resumable, load_checkpoint_file

if TYPE_CHECKING:  # pragma: no cover
    from ..runner import Runner


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
    epoch, batch, iters = runner.state.resume_point
    meta = make_meta(epoch, iters, batch=batch, stop_training=runner.state.stop_training,
                     seed=runner.seed, by_epoch=runner.by_epoch, config=runner.config)
    checkpoint: dict[str, Any] = {
        "meta": meta,
        "state_dict": {k: v.detach().cpu() for k, v in runner.model.state_dict().items()},
        "rng": get_rng_state(),
    }
    wrapper = runner.optim_wrapper
    if save_optimizer and wrapper is not None:
        checkpoint["optimizer"] = wrapper.state_dict()
        checkpoint["param_schedulers"] = [s.state_dict() for s, _ in runner.param_schedulers]
        pending = wrapper.pending_grads()
        if pending is not None:
            checkpoint["pending_grads"] = pending
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
    _apply_optimization(runner, checkpoint)
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
    runner.state.restore(epoch=meta["epoch"], iteration=meta["iter"], batch=meta.get("batch", 0),
                         stop_training=meta.get("stop_training", False))


def _apply_optimization(runner: Runner, checkpoint: dict[str, Any]) -> None:
    """Optimizer (and AMP scaler), unfinished accumulation group, schedulers."""
    wrapper = runner.optim_wrapper
    if "optimizer" in checkpoint and wrapper is not None:
        wrapper.load_state_dict(checkpoint["optimizer"])
        scaler = runner.grad_scaler
        if scaler is not None and "grad_scaler" in checkpoint:  # written by hookline 0.1
            scaler.load_state_dict(checkpoint["grad_scaler"])
        pending = checkpoint.get("pending_grads")
        if pending is not None and not wrapper.restore_grads(pending):
            runner.logger.warning("the checkpoint holds gradients of an unfinished accumulation "
                                  "group that do not match this run's parameters: dropped")
    elif wrapper is not None:
        runner.logger.warning("checkpoint has no optimizer state: the optimizer starts fresh")
    for (scheduler, _), state in zip(runner.param_schedulers,
                                     checkpoint.get("param_schedulers", [])):
        scheduler.load_state_dict(state)


def save(runner: Runner, path: str | Path, *, save_optimizer: bool = True,
         background: bool = False) -> Path:
    """``runner.save_checkpoint``: collect, ``before_save_checkpoint`` hooks, serialise, write."""
    path = Path(path)
    if not path.is_absolute() and path.parent == Path("."):
        path = runner.work_dir / path
    checkpoint = collect(runner, save_optimizer=save_optimizer)
    runner.hooks.call(runner, "before_save_checkpoint", checkpoint=checkpoint)
    if runner.rank == 0:
        payload = serialize(checkpoint)
        writer = runner.checkpoint_writer
        if background and runner.world_size == 1:
            writer.write(path, payload)
        else:
            writer.flush()
            write_checkpoint(path, payload)
    distributed.barrier()
    return path


def load(runner: Runner, path: str | Path, *, resume: bool = True,
         checkpoint: dict[str, Any] | None = None) -> dict[str, Any]:
    """``runner.load_checkpoint``: read (unless given), ``after_load_checkpoint`` hooks, apply."""
    if checkpoint is None:
        runner.checkpoint_writer.flush()
        checkpoint = load_checkpoint_file(path, map_location="cpu")
    runner.hooks.call(runner, "after_load_checkpoint", checkpoint=checkpoint)
    apply(runner, checkpoint, resume=resume, strict=resume)
    what = "resumed" if resume else "loaded weights"
    runner.logger.info("%s from %s (epoch %d, iter %d)", what, path,
                       checkpoint["meta"]["epoch"], checkpoint["meta"]["iter"])
    return checkpoint


def resume_or_load(runner: Runner, resume: str | Path | None,
                   load_from: str | Path | None) -> None:
    """Before a run: ``resume`` ("auto": the newest loadable checkpoint of the work dir, if
    any) the whole run, else load the weights of ``load_from``."""
    if resume == "auto":
        found = find_resumable(runner.work_dir, logger=runner.logger)
        if found is None:
            runner.logger.info("resume='auto': no checkpoint in %s, starting fresh",
                               runner.work_dir)
        else:
            load(runner, found[0], checkpoint=found[1])
    elif resume is not None:
        load(runner, resume)
    elif load_from is not None:
        load(runner, load_from, resume=False)
