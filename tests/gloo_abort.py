"""One retry for a two-process gloo test whose rank died in gloo's C++ with SIGABRT.

Twice, in full suite runs on a loaded 2-core machine, a rank of a two-process
gloo test (``hooks/test_sync_buffers.py`` under ``mp.spawn``,
``compat/test_distributed.py`` under torchrun) aborted with "terminate called
without an active exception"; each passed on every rerun (17 targeted reruns,
7 under load). That message is ``std::terminate`` in C++, not a Python error.

Cause, found later with a core dump (3 runs in 242 under load): at exit,
a gloo worker thread (``ProcessGroupGloo::runLoop``) let go of a finished
collective (an all-gather) only once the interpreter was finalising; dropping
its tensors needed the interpreter lock, the finalising interpreter ended the
thread with a forced unwind through a ``noexcept`` destructor, and C++
terminated. Since then a Runner's exit handler lets go of the process group
(and destroys it when the Runner created it, as under torchrun), which joins
the workers before finalisation (``tests/compat/test_distributed.py`` checks
that no thread is left). A group the user made and never lets go of can
still end this way, so these helpers stay: they run such a
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
