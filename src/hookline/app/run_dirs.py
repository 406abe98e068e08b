"""Run directories: every ``hookline train`` run gets its own folder under the work dir.

A work dir (``--work-dir``, the config's ``work_dir``, else
``work_dirs/<config name>``) is the folder runs go into; each run writes its
config, ``log.txt``, ``metrics.jsonl``, checkpoints and ``curves.png`` into
``<work_dir>/<YYYYmmdd_HHMMSS>/`` (MMEngine's timestamp folders, with
everything of the run inside like Lightning's ``version_N``). Two runs that
start in the same second get ``_2``, ``_3`` ... so a new run never writes
into an earlier run's folder. ``<work_dir>/last_run`` (written atomically)
names the folder of the run started or resumed last; a command that fails
before its run starts puts it back as it was (:func:`restore_last_run`).

While a run trains, its folder holds ``run.lock``, exclusively locked
(``fcntl.flock``) by the training process and naming it (pid, host): a second
``hookline train --resume`` into the same folder is refused
(:func:`lock_run_dir`). The operating system releases the lock when its
process dies, so the file a killed run leaves behind blocks nothing.

A work dir in the flat layout of hookline 0.1 (checkpoints directly in it)
is a run too: :func:`last_run_with_checkpoints` falls back to it, so
``--resume auto`` still continues it there.

Example::

    >>> import tempfile
    >>> work_dir = Path(tempfile.mkdtemp())
    >>> first = new_run_dir(work_dir, now=0.0)
    >>> second = new_run_dir(work_dir, now=0.0)          # the same second: a suffix
    >>> second.name == first.name + "_2", read_last_run(work_dir) == second
    (True, True)
    >>> last_run_with_checkpoints(work_dir) is None     # no run has written a checkpoint yet
    True
    >>> _ = (first / "epoch_1.pth").write_bytes(b"...")
    >>> last_run_with_checkpoints(work_dir) == first
    True
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import time
from pathlib import Path

from hookline.core import ConfigError
from hookline.engine.checkpoint import LATEST_FILENAME, atomic_write
from hookline.engine.checkpoint.names import is_checkpoint_name
from hookline.engine.folder_lock import LOCK_FILE, FolderLock, lock_folder

__all__ = ["LAST_RUN_FILE", "RUN_LOCK_FILE", "RunFileWriteError", "RunLock", "discard_run_dir",
           "has_checkpoints", "is_run_dir_name", "last_run_with_checkpoints", "lock_run_dir", "new_run_dir",
           "read_last_run", "remove_unused_folder", "restore_last_run", "run_dirs",
           "write_last_run"]

#: the file a training run holds locked in its folder (see :func:`lock_run_dir`)
RUN_LOCK_FILE = LOCK_FILE
#: what building a Runner writes into its folder before training starts (and the lock)
_BUILD_OUTPUTS = frozenset({"log.txt", "config.yaml", RUN_LOCK_FILE})

#: the pointer file in a work dir naming the folder of the last run (relative to the work dir)
LAST_RUN_FILE = "last_run"
_RUN_NAME = re.compile(r"(\d{8}_\d{6})(?:_(\d+))?")


def is_run_dir_name(name: str) -> bool:
    """Whether ``name`` is a run folder's name (``20261125_111500``, ``20261125_111500_2``).

    Example::

        >>> is_run_dir_name("20261125_111500_2"), is_run_dir_name("eval")
        (True, False)
    """
    return _RUN_NAME.fullmatch(name) is not None


def _order(path: Path) -> tuple[str, int]:
    match = _RUN_NAME.fullmatch(path.name)
    assert match is not None  # only run folders are sorted
    return match.group(1), int(match.group(2) or 1)


def run_dirs(work_dir: str | Path) -> list[Path]:
    """The run folders of ``work_dir``, oldest first (by the time in their names)."""
    work_dir = Path(work_dir)
    if not work_dir.is_dir():
        return []
    return sorted((p for p in work_dir.iterdir() if p.is_dir() and is_run_dir_name(p.name)),
                  key=_order)


def has_checkpoints(folder: str | Path) -> bool:
    """Whether ``folder`` holds hookline checkpoints (a ``latest`` pointer, or files named
    as the checkpoint hooks name them)."""
    folder = Path(folder)
    if not folder.is_dir():
        return False
    if (folder / LATEST_FILENAME).is_file():
        return True
    return any(is_checkpoint_name(p.name) and p.is_file() for p in folder.iterdir())


def new_run_dir(work_dir: str | Path, *, now: float | None = None, create: bool = True) -> Path:
    """Make (``create``) the folder of a new run, ``<work_dir>/<YYYYmmdd_HHMMSS>[_N]``, and
    point ``last_run`` at it.

    The folder is made with ``exist_ok=False``, so two processes starting in the same
    second get different folders. A folder or pointer that cannot be written (disk full,
    read-only work dir) is a :class:`RunFileWriteError` naming it, and leaves no folder
    behind.
    ``create=False`` (the other processes of a multi-process run, which write nothing) only
    returns the name.
    """
    work_dir = Path(work_dir)
    stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime(time.time() if now is None else now))
    if not create:
        return work_dir / stamp
    try:
        work_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(work_dir, exc) from None
    count = 1
    while True:
        candidate = work_dir / (stamp if count == 1 else f"{stamp}_{count}")
        try:
            candidate.mkdir()
        except FileExistsError:
            count += 1
            continue
        except OSError as exc:
            raise _unwritable(candidate, exc) from None
        try:
            write_last_run(work_dir, candidate)
        except BaseException:  # no empty run folder is left behind
            with contextlib.suppress(OSError):
                candidate.rmdir()
            raise
        return candidate


class RunFileWriteError(ConfigError, OSError):
    """A file or folder ``hookline train`` writes before training (the run's folder, the
    ``last_run`` pointer, ``config.yaml``) cannot be written: the disk is full, the work dir
    read-only, ... One line naming the path, the cause (with its errno name) and what to
    do. A :class:`ConfigError` (the CLI prints it as one ``error:`` line and exits 2, as
    for a work dir it refuses up front) and an :class:`OSError` (``errno`` is the cause's).

    Example::

        >>> error = RunFileWriteError.from_os_error("wd/last_run",
        ...                                         OSError(errno.ENOSPC, "No space left on device"))
        >>> print(str(error).split(";")[0])
        cannot write 'wd/last_run': No space left on device (ENOSPC)
    """

    @classmethod
    def from_os_error(cls, path: str | Path, exc: OSError) -> RunFileWriteError:
        """The error for ``exc``, raised while writing ``path``."""
        cause = exc.strerror or str(exc) or type(exc).__name__
        code = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
        error = cls(f"cannot write {str(path)!r}: {cause}{f' ({code})' if code else ''}; "
                    "free some space there or choose another work dir (--work-dir)")
        error.errno, error.strerror, error.filename = exc.errno, exc.strerror, str(path)
        return error

    def __str__(self) -> str:  # OSError's own would show errno and strerror instead
        return str(self.args[0])


def _unwritable(path: Path, exc: OSError) -> RunFileWriteError:
    return RunFileWriteError.from_os_error(path, exc)


def write_last_run(work_dir: str | Path, run_dir: str | Path) -> Path:
    """Atomically write ``<work_dir>/last_run`` naming ``run_dir`` (``.`` for the work dir
    itself, a 0.1 flat layout); returns the pointer's path. A pointer that cannot be written
    (disk full, read-only work dir) is a :class:`RunFileWriteError` naming it; the pointer as
    it was is left unchanged."""
    work_dir = Path(work_dir)
    run_dir = Path(run_dir)
    try:
        name = run_dir.resolve().relative_to(work_dir.resolve()).as_posix()
    except ValueError:
        raise ValueError(f"run dir {str(run_dir)!r} is not inside the work dir "
                         f"{str(work_dir)!r}") from None
    data = (name + "\n").encode("utf-8")
    try:
        return atomic_write(work_dir / LAST_RUN_FILE, lambda stream: stream.write(data))
    except OSError as exc:  # the disk is full, the work dir read-only: one line, no traceback
        raise _unwritable(work_dir / LAST_RUN_FILE, exc) from None


def read_last_run(work_dir: str | Path) -> Path | None:
    """The folder ``<work_dir>/last_run`` names, when it names an existing folder inside the
    work dir; otherwise None."""
    work_dir = Path(work_dir)
    text = ""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = (work_dir / LAST_RUN_FILE).read_text(encoding="utf-8").strip()
    if not text or "\n" in text or os.path.isabs(text) or ".." in Path(text).parts:
        return None
    folder = work_dir if text == "." else work_dir / text
    return folder if folder.is_dir() else None


def restore_last_run(work_dir: str | Path, previous: Path | None) -> None:
    """Point ``last_run`` back at ``previous`` (what :func:`read_last_run` said before a
    command that failed), or remove it when there was none."""
    work_dir = Path(work_dir)
    if previous is not None and previous.is_dir():
        write_last_run(work_dir, previous)
    elif (work_dir / LAST_RUN_FILE).exists():
        (work_dir / LAST_RUN_FILE).unlink(missing_ok=True)


#: the lock :func:`lock_run_dir` takes (the engine's, shared with the Runner's ``train()``)
RunLock = FolderLock


def lock_run_dir(run_dir: str | Path) -> RunLock | None:
    """Lock ``run_dir`` for this process's training: ``<run_dir>/run.lock``, held with
    ``fcntl.flock`` and naming this process (:func:`hookline.engine.folder_lock.lock_folder`).
    A :class:`ConfigError` naming the holder when another live process holds it; None where
    file locks are not available.

    Example::

        >>> import subprocess, sys, tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> lock = lock_run_dir(folder)
        >>> other = subprocess.run([sys.executable, "-c", "import sys; from hookline.app."
        ...     "run_dirs import lock_run_dir; lock_run_dir(sys.argv[1])", str(folder)],
        ...     capture_output=True, text=True)
        >>> "in use by another hookline train" in other.stderr
        True
        >>> lock.release(); (folder / RUN_LOCK_FILE).exists()
        False
    """
    return lock_folder(run_dir, "wait for it to end or stop it, or train a new run (without "
                                "--resume)")


def last_run_with_checkpoints(work_dir: str | Path) -> Path | None:
    """The run ``--resume auto`` continues and ``hookline test`` evaluates: the run
    ``last_run`` names if it has checkpoints, else the newest run folder that has, else
    the work dir itself when it holds checkpoints (hookline 0.1's flat layout); None when
    no run of ``work_dir`` wrote a checkpoint."""
    work_dir = Path(work_dir)
    last = read_last_run(work_dir)
    if last is not None and has_checkpoints(last):
        return last
    for folder in reversed(run_dirs(work_dir)):
        if has_checkpoints(folder):
            return folder
    return work_dir if has_checkpoints(work_dir) else None


def discard_run_dir(work_dir: str | Path, run_dir: str | Path, previous: Path | None) -> bool:
    """Remove the folder of a run that never started (its Runner could not be built) and
    point ``last_run`` back at ``previous`` (or remove the pointer when there was none).

    Only a folder holding nothing but what a Runner's construction writes (``log.txt``,
    ``config.yaml``) is removed: a folder with anything else in it is left alone and
    False is returned.
    """
    work_dir, run_dir = Path(work_dir), Path(run_dir)
    if not remove_unused_folder(run_dir):
        return False
    restore_last_run(work_dir, previous)
    return True


def remove_unused_folder(folder: str | Path) -> bool:
    """Remove ``folder`` when it holds nothing but what a Runner's construction writes
    (``log.txt``, ``config.yaml``): the folder of a run or an evaluation that never started.
    Returns whether it was removed; a folder with anything else in it is left alone."""
    folder = Path(folder)
    if not folder.is_dir() or {p.name for p in folder.iterdir()} - _BUILD_OUTPUTS:
        return False
    shutil.rmtree(folder)
    return True
