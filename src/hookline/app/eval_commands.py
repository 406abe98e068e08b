"""``hookline test`` and ``hookline val``: evaluate a checkpoint of a run from the command line.

``hookline test [CONFIG] [--checkpoint best|latest|PATH] [--work-dir D] [--set KEY=VALUE ...]``
builds the run a config describes (the demo without CONFIG), loads a
checkpoint's weights and runs ``runner.test()`` (``hookline val``:
``runner.val()``). ``best`` is the ``best_*.pth`` that
``CheckpointHook(save_best=...)`` wrote, ``latest`` what the ``latest``
pointer names, both in the last run of the work dir that wrote checkpoints
(:func:`~hookline.app.run_dirs.last_run_with_checkpoints`); without
``--checkpoint``, best when there is one, else latest. When the checkpoint
holds EMA weights (an ``EMAHook`` state) those are evaluated, as the
EMAHook would after a resume. The metrics are printed on one line and saved
as ``<run dir>/eval/<split>_<checkpoint name>.json``; the evaluation's own
``log.txt`` and ``metrics.jsonl`` go to ``<run dir>/eval/`` too.

Example::

    >>> import tempfile
    >>> pick_checkpoint(tempfile.mkdtemp(), None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: no checkpoint found: no run in ... wrote one ...
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hookline.core import ConfigError
from hookline.engine import distributed
from hookline.engine.checkpoint import (
    CheckpointError,
    atomic_write,
    load_checkpoint_file,
    read_latest,
)
from hookline.engine.checkpoint.fit import weights_problem, without_ddp_prefix
from hookline.engine.logs import close_logger
from hookline.engine.metric_values import is_scalar
from hookline.hooks.ema import EMAHook

from .command_common import (
    add_config_arguments,
    add_work_dir_argument,
    load_command_config,
    work_dir_of,
)
from .config import SAVED_NAME, build_runner, resolve_config, save_config
from .run_dirs import last_run_with_checkpoints, remove_unused_folder

__all__ = ["EVAL_DIR", "add_test_arguments", "add_val_arguments", "checkpoint_weights",
           "checkpoint_of_run", "evaluate_checkpoint", "pick_checkpoint", "run_test", "run_val"]

#: the folder of a run that holds its evaluations
EVAL_DIR = "eval"
CHOICES = "--checkpoint best, latest or the path of a checkpoint file"
_BEST = re.compile(r"best_(?P<key>.+)_(?:epoch|iter)_(?P<n>\d+)\.pth")


# -- arguments ------------------------------------------------------------------------------------
def _add_arguments(parser: argparse.ArgumentParser, split: str) -> None:
    add_config_arguments(parser, f"the run whose checkpoint to evaluate on its {split}_dataloader "
                                 "(without one, the demo)")
    parser.add_argument("--checkpoint", default=None, metavar="best|latest|PATH",
                        help="'best': the best_*.pth checkpoint (CheckpointHook save_best) of the "
                             "last run in the work dir; 'latest': its newest checkpoint; or a "
                             "checkpoint path (default: best when there is one, else latest)")
    add_work_dir_argument(parser, "the folder the runs went into")


def add_test_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``hookline test``'s arguments to ``parser``."""
    _add_arguments(parser, "test")


def add_val_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``hookline val``'s arguments to ``parser``."""
    _add_arguments(parser, "val")


def run_test(args: argparse.Namespace) -> int:
    """Evaluate a checkpoint on the config's test_dataloader; 0 on success."""
    return _run(args, "test")


def run_val(args: argparse.Namespace) -> int:
    """Evaluate a checkpoint on the config's val_dataloader; 0 on success."""
    return _run(args, "val")


def _run(args: argparse.Namespace, split: str) -> int:
    cfg, name = load_command_config(args)
    require_loader(cfg, split, f"hookline {split}")
    checkpoint = pick_checkpoint(work_dir_of(args, cfg, name), args.checkpoint)
    _, line, out = evaluate_checkpoint(cfg, checkpoint, split)
    if distributed.is_main_process():  # under torchrun every process evaluates its shard
        print(f"{line}\nsaved to {out}", flush=True)
    return 0


# -- choosing a checkpoint --------------------------------------------------------------------------
def require_loader(cfg: Mapping[str, Any], split: str, who: str) -> None:
    """A :class:`ConfigError` unless ``cfg`` has a ``<split>_dataloader``."""
    if cfg.get(f"{split}_dataloader") is None:
        raise ConfigError(f"{who} needs a {split}_dataloader in the config, and it has none; add "
                          f"one (e.g. {split}_dataloader: {{dataset: {{type: DigitsDataset, "
                          f"split: {split}}}, batch_size: 128}}, as the demo config has)")


def pick_checkpoint(work_dir: str | Path, which: str | None) -> Path:
    """The checkpoint ``--checkpoint`` names: ``"best"``, ``"latest"``, None (best, else
    latest) in the last run of ``work_dir`` that wrote checkpoints, or a path."""
    if which not in (None, "best", "latest"):
        path = Path(str(which))
        if path.is_dir():
            raise ConfigError(f"checkpoint {str(which)!r} is a folder, not a checkpoint file; "
                              f"accepted: {CHOICES}")
        if not path.is_file():
            raise ConfigError(f"checkpoint {str(which)!r} not found; accepted: {CHOICES}")
        return path
    run = last_run_with_checkpoints(work_dir)
    if run is None:
        raise ConfigError(f"no checkpoint found: no run in {str(work_dir)!r} wrote one (train "
                          f"with hookline train first, or pass --work-dir); accepted: {CHOICES}")
    return checkpoint_of_run(run, which)


def checkpoint_of_run(run: str | Path, which: str | None) -> Path:
    """``"best"``, ``"latest"`` or None (best, else latest): that checkpoint of the run
    folder ``run``; a :class:`ConfigError` when it has none."""
    run = Path(run)
    best = _best_file(run)
    if which == "best" and best is None:
        raise ConfigError(f"no best checkpoint (best_*.pth, written by default_hooks.checkpoint."
                          f"save_best) in {str(run)!r}; accepted: {CHOICES}")
    if best is not None and which != "latest":
        return best
    latest = read_latest(run)
    if latest is None or not latest.is_file():
        what = "no 'latest' pointer" if latest is None else f"'latest' names {latest.name}, missing"
        raise ConfigError(f"no latest checkpoint in {str(run)!r} ({what}); accepted: {CHOICES}")
    return latest


def _best_file(run: Path) -> Path | None:
    """The best checkpoint of ``run``: of one metric's best files the newest (an interrupted
    run may leave the previous best beside it); several metrics are ambiguous."""
    found: dict[str, list[tuple[int, Path]]] = {}
    for path in run.glob("best_*.pth"):
        match = _BEST.fullmatch(path.name)
        if match and path.is_file():
            found.setdefault(match["key"], []).append((int(match["n"]), path))
    if len(found) > 1:
        names = ", ".join(sorted(p.name for files in found.values() for _, p in files))
        raise ConfigError(f"{str(run)!r} holds best checkpoints of several metrics ({names}); "
                          "pass --checkpoint PATH to choose one")
    return max(next(iter(found.values())))[1] if found else None


# -- evaluating --------------------------------------------------------------------------------------
def checkpoint_weights(checkpoint: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The weights to evaluate: the EMA weights when the checkpoint has an ``EMAHook`` state
    (:meth:`EMAHook.weights_from_checkpoint`), else its ``state_dict``; and which they are."""
    hooks = checkpoint.get("hooks") or {}
    for key in hooks:
        if (key == "EMAHook" or key.startswith("EMAHook.")) and "ema" in (hooks[key] or {}):
            return EMAHook.weights_from_checkpoint(checkpoint, key), "EMA weights"
    return dict(checkpoint.get("state_dict") or {}), "model weights"


def evaluate_checkpoint(cfg: Mapping[str, Any], checkpoint: str | Path, split: str,
                        ) -> tuple[dict[str, float], str, Path]:
    """Build the run of ``cfg`` (without its training data) in ``<run>/eval``, load the
    weights of ``checkpoint`` and run ``split`` ("test" or "val"); returns the metrics, a
    one-line report and the JSON file they were saved to (replaced when the same
    checkpoint is evaluated again; no other file of the run is touched)."""
    if split not in ("test", "val"):
        raise ConfigError(f"split must be 'test' or 'val', got {split!r}")
    require_loader(cfg, split, f"hookline {split}")
    checkpoint = Path(checkpoint)
    eval_dir = checkpoint.parent / EVAL_DIR
    spec = {k: v for k, v in cfg.items() if k not in ("train_dataloader", "resume", "load_from")}
    spec = resolve_config(spec, work_dir=eval_dir)  # checked before anything is loaded or written
    state = load_checkpoint_file(checkpoint, map_location="cpu", for_weights=True)
    weights, kind = checkpoint_weights(state)
    fresh = not eval_dir.exists()
    runner = build_runner(spec, save=False)  # eval/config.yaml: once the weights fit
    try:
        weights = dict(without_ddp_prefix(runner.model, {"state_dict": weights})["state_dict"])
        problem = weights_problem(runner.model, weights, strict=True)
        if problem is not None:
            close_logger(runner.logger)
            if fresh:  # nothing was evaluated: leave no eval folder behind
                remove_unused_folder(eval_dir)
            raise CheckpointError(checkpoint, f"does not fit this run's model: {problem}")
        if runner.is_main_process and runner.config is not None:
            save_config(runner.config, runner.work_dir / SAVED_NAME)
        runner.load_checkpoint(checkpoint, resume=False, checkpoint={**state, "state_dict": weights})
        metrics = runner.test() if split == "test" else runner.val()
        loader = runner.test_dataloader if split == "test" else runner.val_dataloader
        main = runner.is_main_process
    finally:
        close_logger(runner.logger)
    meta = state.get("meta") or {}
    samples = _size(loader)
    # numbers as floats; what else a metric reports (lists, dicts, strings) as it is (JSON)
    values = {k: float(v) if is_scalar(v) else v for k, v in metrics.items()}
    report = {"split": split, "metrics": values,
              "checkpoint": str(checkpoint), "weights": kind, "epoch": meta.get("epoch"),
              "iter": meta.get("iter"), "samples": samples,
              "time": datetime.datetime.now().isoformat(timespec="seconds")}
    out = eval_dir / f"{split}_{checkpoint.stem}.json"
    text = json.dumps(report, indent=2) + "\n"
    if main:
        atomic_write(out, lambda stream: stream.write(text.encode("utf-8")))
    shown = ", ".join(f"{key} {value:.4f}" if is_scalar(value) else f"{key} {value}"
                      for key, value in values.items())
    on = f" on {samples} samples" if samples is not None else ""
    line = f"{split}: {shown}{on} ({kind} of {checkpoint}{_position(meta)})"
    return values, line, out


def _position(meta: Mapping[str, Any]) -> str:
    epoch, iteration = meta.get("epoch"), meta.get("iter")
    if not isinstance(iteration, int):
        return ""
    return f", epoch {epoch}, iteration {iteration}" if epoch else f", iteration {iteration}"


def _size(loader: Any) -> int | None:
    dataset = getattr(loader, "dataset", None)
    try:
        return len(dataset) if dataset is not None else None
    except TypeError:
        return None
