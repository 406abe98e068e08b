"""What a checkpoint holds, and putting it back: the whole state of a run.

A checkpoint is a dict of tensors and plain containers (so it loads with
``weights_only=True``)::

    meta            hookline/torch versions, epoch, iter, batch (position in
                    the epoch), val_pending (a validation is due before
                    training goes on), val_computed (its metrics were computed:
                    saved by an after_val_epoch hook; absent in older files),
                    stop_training, seed, time, config
    state_dict      the model's weights (unwrapped from DDP)
    optimizer       ``optim_wrapper.state_dict()``: the optimizer's state (with
                    ``loss_scaler`` under float16 AMP; one entry per name for
                    several optimizers), MMEngine's layout
    pending_grads   gradients of an unfinished accumulation group
    param_schedulers  one state dict per scheduler
    hooks           {hook.state_key: hook.state_dict()} for hooks with state
    rng             python, numpy, torch and CUDA RNG states

Applying one is all or nothing: :func:`apply` checks that it fits the run
(:mod:`.fit`) before changing anything, and puts back what it changed
(:mod:`.undo`) when a part still fails, so :func:`resume_or_load` can go on to
an older checkpoint with a clean run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookline.core import HookError

from .. import distributed
from ..closure_hook import ClosureHook, closure_rank, finished_hooks
from ..rng import get_rng_state, set_rng_state
from ..run_state import describe_position
from ..schedulers_per_optimizer import load_scheduler_state, scheduler_pairs
from .atomic import LATEST_FILENAME, remove_temp_files, write_checkpoint
from .content import make_meta, serialize, to_plain
from .errors import CheckpointError, CheckpointNotFoundError, NoResumableCheckpointError
from .fit import check_fits, other_shapes, unwrapped_model, without_ddp_prefix
from .loading import load_checkpoint_file, resumable_checkpoints
from .names import is_checkpoint_name
from .own_files import check_new_run_files
from .settings import changed_settings
from .undo import Undo

if TYPE_CHECKING:  # pragma: no cover
    from ..hook import Hook
    from ..runner import Runner


def hook_state_keys(runner: Runner) -> dict[str, Hook]:
    """Each hook under a stable key: its ``state_key``, with ``.2``, ``.3`` for repeats, in
    the hook table's order. ClosureHooks of one stage and function (lambdas, most often) are
    numbered by :func:`~hookline.engine.closure_hook.closure_rank`, the ``once=True`` ones that
    finished and left the table included (:func:`~hookline.engine.closure_hook.finished_hooks`):
    a hook keeps its key however many of the others finished, in the run that saved a
    checkpoint and in the run that resumes it (the same hooks, registered in the same order).
    """
    groups: dict[str, list[Hook]] = {}
    for hook in [*runner.hooks.hooks, *finished_hooks(runner)]:
        groups.setdefault(hook.state_key, []).append(hook)
    keys: dict[str, Hook] = {}
    for base, members in groups.items():
        closures = [h for h in members if isinstance(h, ClosureHook)]
        ordered: list[Hook] = members
        if len(members) > 1 and len(closures) == len(members):
            ordered = [*sorted(closures, key=lambda h: closure_rank(runner, h))]
        for hook in ordered:
            key, count = base, 1
            while key in keys:
                count += 1
                key = f"{base}.{count}"
            keys[key] = hook
    return keys


def collect(runner: Runner, *, save_optimizer: bool = True) -> dict[str, Any]:
    """The checkpoint dict of ``runner`` as it is now."""
    state = runner.state
    epoch, batch, iters = state.resume_point
    meta = make_meta(epoch, iters, batch=batch, val_pending=state.val_pending,
                     val_computed=state.val_computed, stop_training=state.stop_training,
                     seed=runner.seed, by_epoch=runner.by_epoch, config=runner.config,
                     optimizer_settings=runner.optimizer_settings)
    loop = runner.train_loop
    if loop is not None and batch:  # mid-epoch: the length of the loader that epoch runs on
        meta["epoch_length"] = loop.epoch_length
    checkpoint: dict[str, Any] = {
        "meta": meta,
        "state_dict": {k: v.detach().cpu()  # torch.compile's wrapper: the plain model's keys
                       for k, v in unwrapped_model(runner.model).state_dict().items()},
        "rng": get_rng_state(),
    }
    wrapper = runner.optim_wrapper
    if save_optimizer and wrapper is not None:
        checkpoint["optimizer"] = wrapper.state_dict()
        checkpoint["param_schedulers"] = [
            s.state_dict() for s, _ in scheduler_pairs(runner.param_schedulers)]
        pending = wrapper.pending_grads()
        if pending is not None:
            checkpoint["pending_grads"] = pending
    hook_states = {}
    for key, hook in hook_state_keys(runner).items():
        hook_state = hook.state_dict()
        if hook_state:
            hook_states[key] = hook_state
    checkpoint["hooks"] = hook_states
    return checkpoint


def _short(exc: BaseException) -> str:
    if isinstance(exc, HookError):
        exc = exc.original
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def apply(runner: Runner, checkpoint: dict[str, Any], *, resume: bool, strict: bool = True,
          path: str | Path = "checkpoint") -> None:
    """Load ``checkpoint`` into ``runner``: weights only, or the whole run when ``resume``.

    All or nothing: a checkpoint that does not fit (see :mod:`.fit`) raises
    :class:`CheckpointError` naming ``path`` before anything changes; a part
    that fails while it goes in (a hook's state, the RNG state, ...) is
    undone with the rest before the error is raised.
    """
    checkpoint = dict(without_ddp_prefix(runner.model, checkpoint))  # raw DDP's "module."
    check_fits(runner, checkpoint, path, resume=resume, strict=strict)
    if not resume:
        _load_weights(runner, checkpoint["state_dict"], strict=strict)
        return
    states = checkpoint.get("hooks") or {}
    keys = hook_state_keys(runner)
    hooks = {key: hook for key, hook in keys.items() if key in states}
    undo = Undo(runner, hooks)
    step = "optimizer"
    try:
        _apply_optimization(runner, checkpoint)
        step = "param_schedulers"
        for (scheduler, by_epoch), state in zip(scheduler_pairs(runner.param_schedulers),
                                                checkpoint.get("param_schedulers", [])):
            load_scheduler_state(scheduler, by_epoch, state)
        for key, hook in hooks.items():
            step = f"the state of hook {key}"
            hook.load_state_dict(states[key])
        if "rng" in checkpoint:
            step = "rng"
            set_rng_state(checkpoint["rng"])
        step = "state_dict"
        _load_weights(runner, checkpoint["state_dict"], strict=strict)
    except Exception as exc:
        undo.restore()
        raise CheckpointError(path, f"does not fit this run: {step}: {_short(exc)}") from exc
    unused = sorted(set(states) - set(keys))
    if unused:
        runner.logger.warning("checkpoint holds state for hooks this run does not have: %s",
                              unused)
    meta = checkpoint["meta"]
    runner.state.restore(epoch=meta["epoch"], iteration=meta["iter"], batch=meta.get("batch", 0),
                         stop_training=meta.get("stop_training", False),
                         val_pending=meta.get("val_pending", False),
                         val_computed=meta.get("val_computed", False))


def _load_weights(runner: Runner, weights: dict[str, Any], *, strict: bool) -> None:
    if not strict:  # fine-tuning with a new head: the others load, as in MMEngine
        reshaped = other_shapes(runner.model, weights)
        if reshaped:
            own = runner.model.state_dict()
            runner.logger.warning(
                "checkpoint weights of another shape, not loaded: %s",
                ", ".join(f"{k} {list(weights[k].shape)} (model: {list(own[k].shape)})"
                          for k in reshaped))
            weights = {k: v for k, v in weights.items() if k not in set(reshaped)}
    missing, unexpected = runner.model.load_state_dict(weights, strict=strict)
    if missing or unexpected:
        runner.logger.warning("checkpoint weights: missing keys %s, unexpected keys %s",
                              list(missing), list(unexpected))


def _apply_optimization(runner: Runner, checkpoint: dict[str, Any]) -> None:
    """Optimizer (and AMP scaler), and the gradients of an unfinished accumulation group."""
    wrapper = runner.optim_wrapper
    if "optimizer" in checkpoint and wrapper is not None:
        saved = checkpoint["meta"].get("optimizer_settings")  # as its run configured them
        changed = changed_settings(checkpoint["optimizer"], wrapper.state_dict()) \
            if not saved else changed_settings(saved, runner.optimizer_settings)
        wrapper.load_state_dict(checkpoint["optimizer"])
        if changed:  # a config edited before --resume: its new values do not apply
            runner.logger.warning(
                "resumed the optimizer as saved, with %s; the run's configuration gives other "
                "values, which a resume does not apply (load the weights only, load_from=, to "
                "train with them)", "; ".join(changed))
        scaler = runner.grad_scaler
        if scaler is not None and "grad_scaler" in checkpoint:  # written by hookline 0.1
            scaler.load_state_dict(checkpoint["grad_scaler"])
        pending = checkpoint.get("pending_grads")
        if pending is None:
            runner.model.zero_grad(set_to_none=True)  # at a group boundary nothing is pending
        elif not wrapper.restore_grads(pending):
            runner.logger.warning("the checkpoint holds gradients of an unfinished accumulation "
                                  "group that do not match this run's parameters: dropped")
    elif wrapper is not None:
        runner.logger.warning("checkpoint has no optimizer state: the optimizer starts fresh")


#: what :func:`collect` puts in a checkpoint besides ``meta`` and ``hooks`` (tensors already)
_RUNNER_ENTRIES = frozenset({"state_dict", "optimizer", "param_schedulers", "pending_grads", "rng"})


def save(runner: Runner, path: str | Path, *, save_optimizer: bool = True,
         background: bool = False, make_room: Sequence[str | Path] = (),
         meta: Mapping[str, Any] | None = None) -> Path:
    """``runner.save_checkpoint``: collect, ``before_save_checkpoint`` hooks, serialise, write.

    ``make_room``: files that may be deleted before the write when the disk is
    full (see :func:`~hookline.engine.checkpoint.write_checkpoint`); ``meta``:
    entries added to the checkpoint's ``meta`` (MMEngine's ``save_checkpoint(meta=)``).
    Numpy values that hooks or ``meta`` put in (a metric's ``np.float64``) are stored as
    Python numbers and tensors (:func:`~.content.to_plain`), which ``weights_only`` loads.
    """
    path = Path(path)
    if not path.is_absolute() and path.parent == Path("."):
        path = runner.work_dir / path
    checkpoint = collect(runner, save_optimizer=save_optimizer)
    if meta:
        checkpoint["meta"].update(meta)
    runner.hooks.call(runner, "before_save_checkpoint", checkpoint=checkpoint)
    for key in checkpoint.keys() - _RUNNER_ENTRIES:  # what hooks store: numpy values as
        checkpoint[key] = to_plain(checkpoint[key])  # numbers and tensors (weights_only)
    if runner.rank == 0:
        payload = serialize(checkpoint)
        spare = [Path(p) for p in make_room]
        writer = runner.checkpoint_writer
        # a weights-only export cannot resume the run: resume="auto" keeps to the full ones
        if background and runner.world_size == 1:
            writer.write(path, payload, make_room=spare, logger=runner.logger,
                         point_latest=save_optimizer)
        else:
            writer.flush()
            write_checkpoint(path, payload, make_room=spare, logger=runner.logger,
                             point_latest=save_optimizer)
    distributed.barrier()
    return path


def revised(weights: Mapping[str, Any], revise_keys: Sequence[tuple[str, str]]
            ) -> dict[str, Any]:
    """``weights`` with every ``(pattern, replacement)`` regex applied to each key, in order
    (MMEngine's ``revise_keys``).

        >>> revised({"module.fc.weight": 1}, [(r"^module\\.", "")])
        {'fc.weight': 1}
    """
    out: dict[str, Any] = {}
    for key, value in weights.items():
        for pattern, replacement in revise_keys:
            key = re.sub(pattern, replacement, key)
        out[key] = value
    return out


def where(meta: dict[str, Any], *, by_epoch: bool) -> str:
    """A checkpoint's position in words (``after epoch 2 (iteration 90)``), worded as the
    line of a run stopped by a signal there."""
    return describe_position(meta["epoch"], meta.get("batch", 0), meta["iter"],
                             by_epoch=by_epoch, val_pending=bool(meta.get("val_pending", False)))


def load(runner: Runner, path: str | Path, *, resume: bool = True,
         checkpoint: dict[str, Any] | None = None, strict: bool | None = None,
         revise_keys: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """``runner.load_checkpoint``: read (unless given), ``after_load_checkpoint`` hooks, apply.

    Every way this fails is a :class:`CheckpointError` naming ``path``, and the
    run is as it was before the call (except for what ``after_load_checkpoint``
    hooks did themselves). Weights (not ``resume``) load from any checkpoint
    with a ``state_dict``, another library's too (an MMEngine training
    checkpoint: its foreign objects are skipped, with a warning); resuming
    needs a hookline checkpoint. ``strict`` (default: ``resume``) requires the
    model's keys and shapes exactly; ``revise_keys`` are MMEngine's ``(pattern,
    replacement)`` regex pairs applied to the weights' keys (after the hooks).
    """
    if checkpoint is None:
        runner.checkpoint_writer.flush()
        checkpoint = load_checkpoint_file(path, map_location="cpu", for_weights=not resume,
                                          logger=runner.logger)
    try:
        runner.hooks.call(runner, "after_load_checkpoint", checkpoint=checkpoint)
    except HookError as exc:  # the hook's message says whether the file or the hook is at fault
        raise CheckpointError(path, f"a hook failed as it was loaded: {exc}") from exc
    if revise_keys and isinstance(checkpoint.get("state_dict"), Mapping):
        checkpoint = {**checkpoint, "state_dict": revised(checkpoint["state_dict"], revise_keys)}
    apply(runner, checkpoint, resume=resume, strict=resume if strict is None else strict,
          path=path)
    runner.has_loaded = True
    if resume:
        runner.logger.info("resumed from %s, continuing %s", path,
                           where(checkpoint["meta"], by_epoch=runner.by_epoch))
    else:
        runner.logger.info("loaded weights from %s", path)
    return checkpoint


def resume_or_load(runner: Runner, resume: str | Path | None,
                   load_from: str | Path | None, *, training: bool = False) -> None:
    """Before a run: remove the temp files of interrupted checkpoint writes from the work dir,
    then ``resume`` ("auto": the newest checkpoint of the work dir that loads and fits) the
    whole run, else load the weights of ``load_from``.

    A new training run (``training``, no ``resume``) in a work dir that already holds
    checkpoints of an earlier run logs a warning: its files go next to the earlier ones,
    and files of the same names are replaced; but not the ``load_from`` file, nor a file
    that is not hookline's: :func:`~.own_files.check_new_run_files` refuses those first.

    ``resume="auto"`` falls back from a checkpoint that does not load or fit to the next
    older one, with a warning each; when the work dir holds hookline checkpoints and none
    of them can be resumed, it raises :class:`NoResumableCheckpointError` rather than
    start afresh over them. A missing work dir, or one with no checkpoint, starts fresh.
    """
    if runner.rank == 0:
        removed = remove_temp_files(runner.work_dir)
        if removed:
            runner.logger.info("removed %d unfinished checkpoint write(s) an interrupted run left "
                               "in %s: %s", len(removed), runner.work_dir,
                               ", ".join(p.name for p in removed))
    if training and resume is None:  # the load_from file, and no file not hookline's, is
        check_new_run_files(runner, load_from)  # replaced: refused before anything is written
    if training and resume is None and _holds_checkpoints(runner.work_dir):
        runner.logger.warning(
            "%s already holds checkpoints of an earlier run: this new run writes next to them "
            "and replaces files of the same names (epoch_N.pth, best_*.pth, latest), and adds "
            "its records to the same metrics.jsonl; pass resume='auto' (hookline train "
            "--resume auto) to continue that run instead, or choose another work_dir",
            runner.work_dir)
    elif training and resume is None and (Path(runner.work_dir) / "metrics.jsonl").is_file():
        runner.logger.warning(
            "%s already holds the metrics.jsonl of an earlier run: this new run adds its "
            "records to it (curves drawn from it mix the runs); choose another work_dir to "
            "keep them apart", runner.work_dir)
    if resume == "auto":
        _resume_auto(runner, load_from if training else None, training=training)
    elif resume is not None:
        load(runner, resume)
    elif load_from is not None:
        load(runner, load_from, resume=False)


def _holds_checkpoints(folder: Path) -> bool:
    if (folder / LATEST_FILENAME).is_file():
        return True
    return folder.is_dir() and any(is_checkpoint_name(p.name) for p in folder.iterdir())


def _resume_auto(runner: Runner, load_from: str | Path | None = None, *,
                 training: bool = False) -> None:
    unloadable: list[CheckpointError] = []
    unfit: list[CheckpointError] = []
    for path, checkpoint in resumable_checkpoints(runner.work_dir, logger=runner.logger,
                                                  failures=unloadable):
        try:
            load(runner, path, checkpoint=checkpoint)
        except CheckpointError as exc:
            runner.logger.warning("skipping checkpoint %s: %s; trying the next older one", path,
                                  exc.reason)
            unfit.append(exc)
            continue
        if unloadable or unfit:
            runner.logger.warning("resumed from %s, older than the %d checkpoint(s) skipped above",
                                  path, len(unloadable) + len(unfit))
        return
    # files that are hookline's own (by name, or next to its `latest` pointer) are never
    # overwritten by a fresh start; a folder of foreign .pth files starts fresh as before
    wrote_here = (runner.work_dir / LATEST_FILENAME).exists()
    ours = unfit + [f for f in unloadable if wrote_here or is_checkpoint_name(f.path.name)]
    if ours and all(isinstance(f, CheckpointNotFoundError) for f in ours):
        runner.logger.warning(  # every checkpoint was deleted; only the pointer is left
            "resume='auto': %s names %s, which no longer exists, and no other checkpoint is "
            "there: starting fresh (the new run's first checkpoint replaces the pointer)",
            runner.work_dir / LATEST_FILENAME, ", ".join(sorted({f.path.name for f in ours})))
        ours = []
    if ours:
        failures = sorted(ours, key=lambda f: f.path.stat().st_mtime if f.path.exists() else 0,
                          reverse=True)
        raise NoResumableCheckpointError.from_failures(runner.work_dir, failures)
    if training:  # a new run after all: what it would replace must be hookline's own
        check_new_run_files(runner, load_from)
    runner.logger.info("resume='auto': no checkpoint in %s, starting fresh", runner.work_dir)
