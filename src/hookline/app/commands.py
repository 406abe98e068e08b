"""``hookline train`` and ``hookline hooks``: the training command-line subcommands.

``hookline train [CONFIG] [--work-dir D] [--resume auto|PATH] [--set KEY=VALUE ...]
[--test] [--profile-hooks] [--no-curves]`` trains the run a config describes (the
packaged demo when CONFIG is left out) in a run folder of its own,
``D/<timestamp>/`` (:mod:`hookline.app.run_dirs`); ``--resume auto``
continues the last run in its folder. ``hookline hooks [CONFIG]`` prints the
hook table of that run without training, or with no CONFIG the catalog of
every registered hook. :mod:`hookline.cli` wires these in; each command is an
``add_*_arguments(parser)`` / ``run_*(args) -> exit code`` pair.

Example::

    >>> import argparse
    >>> from hookline.app import commands as command
    >>> parser = argparse.ArgumentParser(prog="hookline hooks")
    >>> command.add_hooks_arguments(parser)
    >>> from hookline.demo.registry import demo_config_path
    >>> args = parser.parse_args([str(demo_config_path()), "--set", "default_hooks.progress=null"])
    >>> command.run_hooks(args)  # doctest: +ELLIPSIS
    before_run ...
    0
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hookline.core import ConfigError, HookError
from hookline.engine import distributed
from hookline.engine.arguments import resume_and_load_from
from hookline.engine.checkpoint import CheckpointWriteError, read_latest
from hookline.engine.log_file import LogWriteError
from hookline.engine.logs import close_logger
from hookline.hooks.catalog import hook_catalog
from hookline.hooks.invalid_loss import InvalidLossError

from .command_common import (
    add_config_arguments,
    add_work_dir_argument,
    load_command_config,
    work_dir_of,
)
from .config import SAVED_NAME, build_runner, resolve_config, save_config
from .eval_commands import checkpoint_of_run, evaluate_checkpoint, require_loader
from .run_dirs import (
    RunFileWriteError,
    discard_run_dir,
    is_run_dir_name,
    last_run_with_checkpoints,
    lock_run_dir,
    new_run_dir,
    read_last_run,
    restore_last_run,
    write_last_run,
)

CURVES_FILE = "curves.png"


# -- train ----------------------------------------------------------------------------------------
def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``hookline train``'s arguments to ``parser``."""
    add_config_arguments(parser, "without one, train the demo (a CNN on the bundled digits)")
    add_work_dir_argument(parser, "the folder runs go into: each run writes its config, log.txt, "
                                  "metrics.jsonl, checkpoints and curves.png into DIR/<timestamp>/")
    parser.add_argument("--resume", default=None, metavar="auto|PATH",
                        help="'auto': continue the last run of the work dir that wrote checkpoints, "
                             "in its folder, from its newest checkpoint (a new run if there is "
                             "none); or a checkpoint path")
    parser.add_argument("--test", action="store_true",
                        help="after training, evaluate the best checkpoint (else the last one) on "
                             "the config's test_dataloader, as hookline test does")
    parser.add_argument("--profile-hooks", action="store_true",
                        help="time every hook call and print a (hook, stage, calls, total ms) table at "
                             "the end")
    parser.add_argument("--no-curves", action="store_true",
                        help=f"do not plot metrics.jsonl to {CURVES_FILE} after training")


def run_train(args: argparse.Namespace) -> int:
    """Train the configured run in a run folder of its work dir; 0 on success. A signal ends
    it with ``TrainingInterrupted`` (exit code 128 + signal number) after a checkpoint is
    saved; ``curves.png`` is drawn for an interrupted or failed run too. A command that
    fails before training starts leaves the work dir as it was (``last_run`` included);
    the run folder is locked while it trains (:func:`~hookline.app.run_dirs.lock_run_dir`)."""
    cfg, name = load_command_config(args)
    work_dir = work_dir_of(args, cfg, name)
    if isinstance(cfg.get("resume"), bool):  # MMEngine's resume: true / false, as the Runner reads it
        cfg["resume"], cfg["load_from"] = resume_and_load_from(cfg["resume"], cfg.get("load_from"))
    resume = args.resume if args.resume is not None else cfg.get("resume")
    check_resume_path(resume, "--resume" if args.resume is not None else "the config's resume")
    if args.test:
        require_loader(cfg, "test", "hookline train --test")
        if distributed.launched_world_size() > 1:
            raise ConfigError("hookline train --test evaluates in one process; after a "
                              "multi-process training run hookline test (with torchrun, too)")
    # the whole config is checked before a run folder is made
    resolve_config(cfg, work_dir=work_dir, resume=resume, for_training=True)
    undo = _Undo(work_dir)
    try:
        run_dir, earlier = choose_run_dir(work_dir, resume)
    except BaseException:  # e.g. a full disk: no empty work dir is left behind either
        if not undo.existed and _main_rank():
            with contextlib.suppress(OSError):
                work_dir.rmdir()
        raise
    undo.run_dir, undo.fresh = run_dir, run_dir.is_dir() and not any(run_dir.iterdir())
    lock = None
    try:
        lock = lock_run_dir(run_dir) if run_dir.is_dir() and _main_rank() else None
        runner = build_runner(cfg, work_dir=run_dir, resume=resume, for_training=True,
                              save=False)  # saved when training starts (see begin below)
    except BaseException:  # e.g. a configure_optimizers() result the Runner refuses
        undo()
        if lock is not None:
            lock.release()
        raise
    try:
        return _train(args, cfg, runner, undo, earlier)
    except Exception as exc:
        failure = training_failure(exc)
        if failure is None:  # a config mistake (the CLI's error line) or a bug (a traceback)
            raise
        message, code = failure
        print(f"error: {message}", file=sys.stderr, flush=True)
        return code
    finally:
        if lock is not None:
            lock.release()


def _train(args: argparse.Namespace, cfg: dict, runner: Any, undo: _Undo,
           earlier: Path | None) -> int:
    """``run_train`` once its Runner is built: train, then the summary (and ``--test``)."""
    started: list[bool] = []
    work_dir = undo.work_dir

    def begin(runner: Any) -> None:
        """Training starts: the resume (or ``load_from``) went in, so the run's config may be
        written now; a failed resume changes no file of the run it tried to continue, and
        a config that cannot be written (a full disk) leaves no run folder behind."""
        if runner.config is not None:  # the saved config trains a new run beside this one
            runner.config["work_dir"] = str(work_dir)
            if runner.is_main_process:
                save_config(runner.config, runner.work_dir / SAVED_NAME)
        started.append(True)

    runner.on("before_train", begin, once=True, priority="LOWEST")  # after the hooks' checks
    runner.resume_command = resume_command(args)  # the stop message's hint (engine.signals)
    if earlier is not None:
        runner.logger.info("a new run in %s; the last run is in %s (--resume auto continues it)",
                           runner.work_dir, earlier)
    if cfg.get("test_dataloader") is not None and not args.test:
        runner.logger.info("the config's test_dataloader is not used by training: add --test "
                           "to test the best checkpoint after training, or run hookline test")
    if args.profile_hooks:
        runner.hooks.start_profiling()
    start = time.perf_counter()
    try:
        runner.train()
    except BaseException:
        if not started:  # the checkpoint to resume or load did not go in: nothing trained
            undo()
        elif runner.is_main_process and not args.no_curves and not _write_failure():
            # what was logged is plotted; no note: the error that stopped training is the news
            with contextlib.suppress(Exception):
                write_training_curves(runner.work_dir)
        raise
    finally:
        if args.profile_hooks and runner.is_main_process:
            print(profile_table(runner), flush=True)
    elapsed = time.perf_counter() - start
    if runner.is_main_process:
        outputs = _outputs(runner, write_curves=not args.no_curves)
        print(f"{summary(runner, elapsed)}\noutputs in {runner.work_dir}: {outputs}", flush=True)
        if args.test:
            checkpoint = checkpoint_of_run(runner.work_dir, None)
            _, line, out = evaluate_checkpoint(cfg, checkpoint, "test")
            print(f"{line}\nsaved to {out}", flush=True)
    return 0


#: hookline's own errors that end a training run for a reason the user can act on, with the
#: exit code each gets: one ``error:`` line with the error's own message (not the hook's
#: that raised it), no traceback. A file of the run that cannot be written is 2 (docs/cli.md),
#: a training failure (a NaN loss) is 1. Any other ConfigError or CheckpointError is the
#: CLI's (2); anything else is a bug: its traceback, exit code 1.
_TRAINING_FAILURES: tuple[tuple[type[BaseException], int], ...] = (
    (CheckpointWriteError, 2),
    (LogWriteError, 2),
    (RunFileWriteError, 2),
    (InvalidLossError, 1),
)


def training_failure(exc: BaseException) -> tuple[str, int] | None:
    """The ``error:`` message and exit code for ``exc`` (also raised inside a hook) when it
    is one of :data:`_TRAINING_FAILURES`, else None.

    Example::

        >>> message, code = training_failure(InvalidLossError(2, float("nan"), 1))
        >>> message[:39], code
        ('the training loss is nan at iteration 2', 1)
        >>> training_failure(ValueError("a bug")) is None
        True
    """
    original = exc.original if isinstance(exc, HookError) else exc
    for kind, code in _TRAINING_FAILURES:
        if isinstance(original, kind):
            return str(original), code
    return None


def _write_failure() -> bool:
    """Whether the exception being handled is a file that could not be written (a full disk:
    no plot is attempted after it)."""
    exc = sys.exc_info()[1]
    original = exc.original if isinstance(exc, HookError) else exc
    return isinstance(original, OSError)


def _main_rank() -> bool:
    return int(os.environ.get("RANK", "0")) == 0


class _Undo:
    """Puts the work dir back as it was before a ``hookline train`` whose run never started:
    the folder it made removed (when it holds nothing else), ``last_run`` as it was."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.existed = work_dir.exists()
        self.previous = read_last_run(work_dir)
        self.run_dir: Path | None = None
        self.fresh = False

    def __call__(self) -> None:
        if not _main_rank() or self.run_dir is None:
            return
        # best effort: the error that brought us here is the one raised (a pointer that
        # cannot be put back names a removed folder, which read_last_run ignores)
        with contextlib.suppress(OSError, ConfigError):
            if self.fresh:
                _discard(self.work_dir, self.run_dir, self.previous, self.existed)
            else:
                restore_last_run(self.work_dir, self.previous)


def check_resume_path(resume: Any, what: str) -> None:
    """A :class:`ConfigError` when ``resume`` names a folder (``hookline val --checkpoint``
    refuses one the same way): what is accepted, and the folder's newest checkpoint."""
    if not isinstance(resume, (str, os.PathLike)) or resume == "auto" or not Path(resume).is_dir():
        return
    newest = None
    with contextlib.suppress(Exception):  # an unreadable pointer: no hint
        newest = read_latest(resume)
    hint = f" (its newest checkpoint, as its 'latest' names it: {newest})" if newest else ""
    raise ConfigError(f"{what} {str(resume)!r} is a folder, not a checkpoint file{hint}; "
                      "accepted: auto (the last run of the work dir, from its newest checkpoint) "
                      "or the path of a checkpoint file")


def resume_command(args: argparse.Namespace) -> str:
    """The ``hookline train`` command that continues this run: the same config, work dir,
    overrides and options, with ``--resume auto``."""
    words = ["hookline", "train"] + ([args.config] if args.config is not None else [])
    if args.work_dir:
        words += ["--work-dir", args.work_dir]
    for override in args.overrides:
        words += ["--set", override]
    words += [flag for flag, on in (("--test", args.test), ("--profile-hooks", args.profile_hooks),
                                    ("--no-curves", args.no_curves)) if on]
    return shlex.join(words + ["--resume", "auto"])


def _discard(work_dir: Path, run_dir: Path, previous: Path | None, work_dir_existed: bool) -> None:
    """Remove the folder of a run that never started, and the work dir too when this command
    made it and it is empty now."""
    if discard_run_dir(work_dir, run_dir, previous) and not work_dir_existed:
        with contextlib.suppress(OSError):  # not empty (another run started meanwhile): keep it
            work_dir.rmdir()


def choose_run_dir(work_dir: Path, resume: Any) -> tuple[Path, Path | None]:
    """The folder this run writes into, and (for a new run) the last earlier run with
    checkpoints, if any.

    ``resume="auto"``: the last run with checkpoints (a resumed run is the same run), else
    a new one; a checkpoint path in one of this work dir's runs (or in the work dir itself,
    hookline 0.1's flat layout): that run; anything else: a new run folder. Only the main
    process (``RANK`` 0) makes folders and writes the ``last_run`` pointer.
    """
    main = _main_rank()
    earlier = last_run_with_checkpoints(work_dir)
    if resume == "auto" and earlier is not None:
        target: Path | None = earlier
    elif resume is not None and resume != "auto":
        folder = Path(str(resume)).parent
        inside = folder.resolve() == work_dir.resolve() or (
            is_run_dir_name(folder.name) and folder.parent.resolve() == work_dir.resolve())
        target = folder if inside else None
    else:
        target = None
    if target is not None:
        if main:
            write_last_run(work_dir, target)
        return target, None
    return new_run_dir(work_dir, create=main), earlier


def _print_note(note: str | None) -> None:
    if note:
        print(note, flush=True)


def summary(runner: Any, seconds: float) -> str:
    """One line: how far training went, how long it took, the last validation metrics."""
    if runner.by_epoch:
        length = f"{runner.epoch}/{runner.max_epochs} epochs ({runner.iter} iterations)"
    else:
        length = f"{runner.iter}/{runner.max_iters} iterations"
    metrics = runner.message_hub.info.get("val_metrics")
    if metrics:
        shown = ", ".join(f"{key} {value:.4f}" for key, value in metrics.items())
        result = f"final validation: {shown}"
    elif "train/loss" in runner.message_hub:
        result = f"last training loss {runner.message_hub.latest('train/loss'):.4f}"
    elif trained := [key for key in runner.message_hub.log_scalars if key.startswith("train/")
                     and key not in ("train/time", "train/data_time")]:
        # a model's own train_step logs its own names (a GAN's d_loss, g_loss)
        shown = ", ".join(f"{key[len('train/'):]} {runner.message_hub.latest(key):.4f}"
                          for key in trained[:4])
        result = f"last training values: {shown}"
    else:
        result = "no training left to do (the run was already complete)"
    return f"trained {length} in {seconds:.1f} s; {result}"


def _outputs(runner: Any, write_curves: bool) -> str:
    work_dir = Path(runner.work_dir)
    if write_curves:
        _print_note(write_training_curves(work_dir))
    names = sorted(p.name for p in work_dir.iterdir() if p.is_file())
    checkpoints = sorted((n for n in names if n.endswith(".pth")), key=natural_order)
    others = [n for n in ("config.yaml", "log.txt", "metrics.jsonl", CURVES_FILE) if n in names]
    parts = others[:3]
    if checkpoints:
        parts.append(f"checkpoints ({', '.join(checkpoints)})")
    return ", ".join(parts + others[3:])


def natural_order(name: str) -> tuple:
    """A sort key putting numbers in a name in numeric order: ``epoch_2`` before
    ``epoch_10``.

    Example::

        >>> sorted(["epoch_10.pth", "epoch_2.pth", "best_acc_epoch_9.pth", "epoch_1.pth"],
        ...        key=natural_order)
        ['best_acc_epoch_9.pth', 'epoch_1.pth', 'epoch_2.pth', 'epoch_10.pth']
    """
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", name) if part)


def write_training_curves(work_dir: str | Path, name: str = CURVES_FILE) -> str | None:
    """Plot ``work_dir/metrics.jsonl`` (loss, metrics and lr against the iteration) to
    ``work_dir/name``; returns a note when there is nothing to plot."""
    metrics = Path(work_dir) / "metrics.jsonl"
    if not metrics.is_file():
        return f"no {metrics} (is the logger hook off?): {name} not written"
    from hookline.inspect.plots import (  # noqa: PLC0415  (matplotlib only when plotting)
        plot_training_curves,
        read_metrics,
    )

    try:
        plot_training_curves(_latest_records(read_metrics(metrics)), Path(work_dir) / name,
                             exclude=("epoch", "time", "data_time"))
    except ConfigError as exc:
        return f"{name} not written: {exc}"
    return None


def _latest_records(records: list[dict]) -> list[dict]:
    """One record per (mode, iteration), the last one written (a resumed run or a new run in
    the same work dir rewrites iterations), in iteration order; ``lr`` moved after the
    other values of a record, so that the loss gets the first panel."""
    latest: dict[tuple, dict] = {}
    for index, record in enumerate(records):
        where = record.get("iter", index)
        latest[(str(record.get("mode")), where)] = record
    ordered = sorted(latest.values(), key=lambda r: (r.get("iter", 0), r.get("mode") != "train"))
    return [{k: v for k, v in r.items() if k != "lr"} | ({"lr": r["lr"]} if "lr" in r else {})
            for r in ordered]


def profile_table(runner: Any) -> str:
    """The hook-call profile of ``runner`` (``runner.hooks.start_profiling()`` turns it on):
    one row per (hook, stage) with calls and total milliseconds, slowest first."""
    return f"hook profile (time spent inside hooks):\n{runner.hook_profile().table()}"


# -- hooks ----------------------------------------------------------------------------------------
def add_hooks_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``hookline hooks``' arguments to ``parser``."""
    add_config_arguments(parser, "print the hook table of its run (which hook runs at which stage, "
                                  "in order) without training; without one, list every registered hook")
    parser.add_argument("--markdown", action="store_true",
                        help="print Markdown: the run's hook table with CONFIG, else the catalog")


def run_hooks(args: argparse.Namespace) -> int:
    """Print the configured run's hook table, or the hook catalog; 0 on success."""
    if args.config is None:
        if args.overrides:
            raise ConfigError("--set applies to a CONFIG: hookline hooks CONFIG --set KEY=VALUE")
        print(hook_catalog(markdown=args.markdown))
        return 0
    cfg, _ = load_command_config(args)
    cfg.pop("num_threads", None)  # nothing is trained: leave this process's threads alone
    scratch = tempfile.mkdtemp(prefix="hookline-hooks-")
    try:
        runner = build_runner(cfg, work_dir=scratch)
        print(runner.hooks.table(markdown=args.markdown))
        close_logger(runner.logger)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0
