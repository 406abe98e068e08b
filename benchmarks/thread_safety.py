"""The cost of hookline.core's thread safety: this tree against a baseline commit, interleaved.

The thread-safe core keeps emission lock-free: ``Event.emit`` and a call of a
``@hookable`` function take no lock; registration and removal take one. This
script times both versions in one process, in interleaved batches (the same
method as ``dispatch.py``), so the machine's load hits both alike:

* ``Event.emit(1)`` with 0, 1 and 8 no-op hooks, and with one ``every=2`` hook
  (the filter counter changed);
* a ``@hookable`` function with no hook and with one post hook;
* ``register`` + ``remove`` of one hook (the path that now takes the lock).

The baseline is the ``src/hookline/core`` of a git revision (default: the
last commit before the change), extracted with ``git archive`` into a
temporary directory and imported under another name.

    .venv/bin/python benchmarks/thread_safety.py [--baseline REV] [--repeat 15] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType

import hookline.core as current
from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs
from dispatch import cell, measure_all

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "d2fda7b"  # the last commit before hookline.core became thread-safe


def load_baseline(rev: str, into: str) -> ModuleType:
    """``src/hookline/core`` of ``rev``, imported as the package ``baseline_core``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/hookline/core"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    package = Path(into) / "src" / "hookline" / "core"
    spec = importlib.util.spec_from_file_location("baseline_core", package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_core"] = module
    spec.loader.exec_module(module)
    return module


def noop(x):  # noqa: ARG001 - a hook taking one argument
    return None


def statements(core: ModuleType) -> dict[str, tuple[str, dict]]:
    """label -> (statement, namespace) for one version of hookline.core."""
    out: dict[str, tuple[str, dict]] = {}
    for n in (0, 1, 8):
        event = core.Event("ping")
        for _ in range(n):
            event.register(noop)
        out[f"Event.emit, {n} hook(s)"] = ("event.emit(1)", {"event": event})
    filtered = core.Event("every")
    filtered.register(noop, every=2)
    out["Event.emit, 1 hook every=2"] = ("event.emit(1)", {"event": filtered})
    bare = core.hookable(lambda x: x)
    with_post = core.hookable(lambda x: x)
    with_post.post(lambda *_: None)
    out["@hookable call, no hooks"] = ("f(1)", {"f": bare})
    out["@hookable call, one post hook"] = ("f(1)", {"f": with_post})
    target = core.Event("target")
    out["register + remove"] = ("event.register(noop).remove()", {"event": target, "noop": noop})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="git revision to compare with")
    parser.add_argument("--repeat", type=int, default=15, help="timed batches per figure")
    parser.add_argument("--quick", action="store_true", help="far fewer calls per batch")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = load_baseline(args.baseline, tmp)
        old, new = statements(baseline), statements(current)
        stmts = {}
        for label in new:
            stmts[label, "baseline"] = old[label]
            stmts[label, "this tree"] = new[label]
        results = measure_all(stmts, args.repeat, args.quick)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {sys.version.split()[0]}; "
          f"load average at start {load:.1f}")
    print(f"baseline: {args.baseline}; ns per statement, min / median over {args.repeat} batches\n")
    print(f"| statement | baseline ({args.baseline}) | this tree | difference (min) |")
    print("|---|---:|---:|---:|")
    for label in new:
        before, after = results[label, "baseline"], results[label, "this tree"]
        print(f"| {label} | {cell(before)} | {cell(after)} | {after[0] - before[0]:+.1f} ns |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
