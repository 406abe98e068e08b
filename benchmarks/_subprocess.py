"""Workers in fresh subprocesses, for the benchmarks that compare frameworks or sizes.

A benchmark script runs itself again with ``--worker ...``: the worker imports
the framework it measures (and only that one), does its work and prints one
``RESULT {json}`` line, which :func:`run_worker` reads back. Each worker starts
from a clean process (no framework's imports, caches or allocations carry
over), and a framework that is not installed is skipped by :func:`importable`.

Example::

    >>> import sys
    >>> run_worker([sys.executable, "-c", "print('RESULT {\\"x\\": 1}')"])
    {'x': 1}
    >>> importable("hookline"), importable("no_such_framework")
    (True, False)
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
from importlib import metadata
from typing import Any

from _machine import cpu_model

PREFIX = "RESULT "


def report(result: dict[str, Any]) -> None:
    """Print the worker's result as the line :func:`run_worker` reads."""
    print(PREFIX + json.dumps(result), flush=True)


def run_worker(argv: list[str], *, timeout: float = 900, threads: int = 1,
               env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``argv`` (on the CPU, ``threads`` OpenMP threads) and return its last RESULT."""
    environ = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                   CUDA_VISIBLE_DEVICES="", **(env or {}))
    proc = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=timeout)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(PREFIX):
            return json.loads(line[len(PREFIX):])
    raise RuntimeError(f"{' '.join(argv[1:])} failed (exit {proc.returncode}):\n"
                       f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")


def importable(module: str) -> bool:
    """Whether ``module`` can be imported here (without importing it)."""
    return importlib.util.find_spec(module) is not None


def version(package: str) -> str:
    """The installed version of ``package`` (a distribution name), or ``?``."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def machine_line() -> str:
    """The machine line: cores, CPU model, Python and torch versions."""
    return (f"machine: {os.cpu_count()} cores, {cpu_model()}, Python "
            f"{platform.python_version()}, torch {version('torch')}")
