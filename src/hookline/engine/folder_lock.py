"""One training process per folder: ``run.lock``, exclusively locked while a run trains.

Two runs writing checkpoints into one folder replace each other's files (the
same ``epoch_N.pth`` names) and their ``max_keep_ckpts`` delete each other's.
:func:`lock_folder` takes ``<folder>/run.lock`` with ``fcntl.flock`` and
writes this process's name into it; another process asking for it gets one
:class:`ConfigError` naming the holder. The operating system releases the
lock when its process dies, so the file a killed run leaves behind blocks
nothing. In one process the lock is shared: ``hookline train`` locks its run
folder before it builds the Runner, whose ``train()`` locks it again.

Example::

    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> lock = lock_folder(folder, "give it another folder")
    >>> again = lock_folder(folder, "give it another folder")  # this process: shared
    >>> again.release(); (folder / LOCK_FILE).exists()
    True
    >>> lock.release(); (folder / LOCK_FILE).exists()
    False
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path

from hookline.core import ConfigError

__all__ = ["LOCK_FILE", "FolderLock", "lock_folder"]

#: the file a training run holds locked in its folder
LOCK_FILE = "run.lock"

_held: dict[str, FolderLock] = {}  # this process's locks, by the lock file's real path
_guard = threading.Lock()


class FolderLock:
    """A lock :func:`lock_folder` took: ``release()`` once per :func:`lock_folder` call; the
    last removes the file (while still holding it) and unlocks."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd
        self._holders = 1

    def release(self) -> None:
        """Give this holder's share back; twice is harmless once the lock is gone."""
        with _guard:
            if self._fd is None:
                return
            self._holders -= 1
            if self._holders > 0:
                return
            fd, self._fd = self._fd, None
            _held.pop(str(self.path), None)
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(fd)


def lock_folder(folder: str | Path, fix: str) -> FolderLock | None:
    """Lock ``folder`` for this process: ``<folder>/run.lock`` (``folder`` must exist). A
    :class:`ConfigError` naming the holder and ``fix`` (what to do instead) when another
    live process holds it; None where file locks are not available."""
    try:
        import fcntl  # noqa: PLC0415  (POSIX only)
    except ImportError:  # pragma: no cover  (Windows: no lock)
        return None
    path = Path(os.path.realpath(Path(folder) / LOCK_FILE))
    with _guard:
        held = _held.get(str(path))
        if held is not None:
            held._holders += 1  # noqa: SLF001  (this module's own class)
            return held
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise ConfigError(f"folder {str(folder)!r} is in use by another hookline training "
                              f"run ({holder}); two runs there would replace each other's "
                              f"checkpoints: {fix}") from None
        except OSError:  # a file system without locks: train unlocked
            os.close(fd)
            return None
        if _same_file(fd, path):  # not removed by a holder releasing it meanwhile
            break
        os.close(fd)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    with contextlib.suppress(OSError):  # a full disk: locked all the same, its holder unnamed
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {stamp}\n".encode())
    lock = FolderLock(path, fd)
    with _guard:
        _held[str(path)] = lock
    return lock


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except OSError:
        return False


def _holder(fd: int) -> str:
    """What the lock file says about its holder."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = os.pread(fd, 200, 0).decode("utf-8").strip()
        if text:
            return text
    return "a process that has not written its name yet"
