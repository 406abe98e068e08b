"""One retry for a two-process gloo test whose rank died in gloo's C++ with SIGABRT.

Twice, in full suite runs on a loaded 2-core machine, a rank of a two-process
gloo test (``hooks/test_sync_buffers.py`` under ``mp.spawn``,
``compat/test_distributed.py`` under torchrun) aborted with "terminate called
without an active exception" before its first logged iteration; each passed
on every rerun (17 targeted reruns, 7 under load). That message is
``std::terminate`` in C++ (a joinable ``std::thread`` destroyed, or an exception
leaving a ``noexcept`` function), not a Python error. These helpers run such a
launch once more in exactly that case, and only then, and warn when they do,
so that a flake of the process group's setup does not fail CI while any other
failure (an assertion, a Python traceback, a hang, a second abort) still does.
"""

from __future__ import annotations

import subprocess
import warnings
from collections.abc import Callable
from typing import Any

ABORT = "terminate called without an active exception"


def _warn(what: str) -> None:
    warnings.warn(f"{what}: a rank aborted in C++ ({ABORT!r}); ran it once more", stacklevel=3)


def run_torchrun(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, **kwargs)``, once more if a rank aborted as described above."""
    proc = subprocess.run(cmd, **kwargs)
    if proc.returncode != 0 and ABORT in (proc.stdout or "") + (proc.stderr or ""):
        _warn("torchrun")
        proc = subprocess.run(cmd, **kwargs)
    return proc


def spawn_twice_on_abort(spawn: Callable[[int], Any]) -> None:
    """``spawn(0)`` (an ``mp.spawn(...)`` call), then ``spawn(1)`` if a process died of
    SIGABRT (the attempt number lets the second use a fresh rendezvous file)."""
    import torch.multiprocessing as mp  # noqa: PLC0415  (only tests that spawn import it)

    try:
        spawn(0)
    except mp.ProcessExitedException as exc:
        if exc.exit_code != -6:  # -6: SIGABRT, what std::terminate ends in
            raise
        _warn("mp.spawn")
        spawn(1)
