"""``hookline train`` and ``hookline hooks``: the training command-line subcommands.

``hookline train [CONFIG] [--work-dir D] [--resume auto|PATH] [--set KEY=VALUE ...]
[--profile-hooks] [--no-curves]`` trains the run a config describes (the
packaged demo when CONFIG is left out). ``hookline hooks [CONFIG]`` prints the
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
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from hookline.core import ConfigError
from hookline.demo.registry import demo_config_path
from hookline.engine.logs import close_logger
from hookline.hooks.catalog import hook_catalog

from .config import apply_overrides, build_runner, load_config

DEFAULT_WORK_DIRS = Path("work_dirs")
CURVES_FILE = "curves.png"


# -- shared ---------------------------------------------------------------------------------------
def _add_config_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("config", nargs="?", default=None, metavar="CONFIG",
                        help=f"a YAML or JSON config file; {what}")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="override a config value: dotted keys, list items as hooks[0].interval, "
                             "values read as YAML (e.g. --set optimizer.lr=0.05 --set "
                             "default_hooks.progress=null); repeatable")


def _load(args: argparse.Namespace) -> tuple[dict, str]:
    """The config (overrides applied) and the name of the run."""
    if args.config is None:
        return apply_overrides(load_config(demo_config_path()), args.overrides), "demo"
    return apply_overrides(load_config(args.config), args.overrides), Path(args.config).stem


# -- train ----------------------------------------------------------------------------------------
def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``hookline train``'s arguments to ``parser``."""
    _add_config_arguments(parser, "without one, train the demo (a CNN on the bundled digits)")
    parser.add_argument("--work-dir", default=None, metavar="DIR",
                        help="where the resolved config, log.txt, metrics.jsonl, checkpoints and "
                             "curves.png go (default: the config's work_dir, else work_dirs/<config name>)")
    parser.add_argument("--resume", default=None, metavar="auto|PATH",
                        help="'auto': continue from the newest checkpoint in the work dir (start fresh "
                             "if there is none); or a checkpoint path")
    parser.add_argument("--profile-hooks", action="store_true",
                        help="time every hook call and print a (hook, stage, calls, total ms) table at "
                             "the end")
    parser.add_argument("--no-curves", action="store_true",
                        help=f"do not plot metrics.jsonl to {CURVES_FILE} after training")


def run_train(args: argparse.Namespace) -> int:
    """Train the configured run; 0 on success. A signal ends it with ``TrainingInterrupted``
    (exit code 128 + signal number) after a checkpoint is saved."""
    cfg, name = _load(args)
    work_dir = args.work_dir or cfg.get("work_dir") or DEFAULT_WORK_DIRS / name
    runner = build_runner(cfg, work_dir=work_dir, resume=args.resume, for_training=True)
    if args.resume is None and cfg.get("resume") is None and (runner.work_dir / "latest").exists():
        runner.logger.info("%s already holds checkpoints: starting a new run "
                           "(pass --resume auto to continue the last one)", runner.work_dir)
    if args.profile_hooks:
        runner.hooks.start_profiling()
    start = time.perf_counter()
    try:
        runner.train()
    finally:
        if args.profile_hooks and runner.is_main_process:
            print(profile_table(runner), flush=True)
    elapsed = time.perf_counter() - start
    if runner.is_main_process:
        outputs = _outputs(runner, write_curves=not args.no_curves)
        print(f"{summary(runner, elapsed)}\noutputs in {runner.work_dir}: {outputs}", flush=True)
    return 0


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
    else:
        result = "no training left to do (the run was already complete)"
    return f"trained {length} in {seconds:.1f} s; {result}"


def _outputs(runner: Any, write_curves: bool) -> str:
    work_dir = Path(runner.work_dir)
    if write_curves:
        note = write_training_curves(work_dir)
        if note:
            print(note, flush=True)
    names = sorted(p.name for p in work_dir.iterdir() if p.is_file())
    checkpoints = [n for n in names if n.endswith(".pth")]
    others = [n for n in ("config.yaml", "log.txt", "metrics.jsonl", CURVES_FILE) if n in names]
    parts = others[:3]
    if checkpoints:
        parts.append(f"checkpoints ({', '.join(checkpoints)})")
    return ", ".join(parts + others[3:])


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
    _add_config_arguments(parser, "print the hook table of its run (which hook runs at which stage, "
                                  "in order) without training; without one, list every registered hook")
    parser.add_argument("--markdown", action="store_true",
                        help="print the hook catalog as a Markdown table (no CONFIG)")


def run_hooks(args: argparse.Namespace) -> int:
    """Print the configured run's hook table, or the hook catalog; 0 on success."""
    if args.config is None:
        if args.overrides:
            raise ConfigError("--set applies to a CONFIG: hookline hooks CONFIG --set KEY=VALUE")
        print(hook_catalog(markdown=args.markdown))
        return 0
    cfg, _ = _load(args)
    cfg.pop("num_threads", None)  # nothing is trained: leave this process's threads alone
    scratch = tempfile.mkdtemp(prefix="hookline-hooks-")
    try:
        runner = build_runner(cfg, work_dir=scratch)
        print(runner.hook_table())
        close_logger(runner.logger)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0
