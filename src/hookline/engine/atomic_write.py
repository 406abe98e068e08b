"""Atomic file writes: a crash at any moment leaves the old file or the new one, never half.

The data goes to a temp file (``.<name>.<random>.tmp``) in the target's folder,
is flushed and fsynced, then ``os.replace``-d onto the target, and the folder
is fsynced.

Example::

    >>> import tempfile
    >>> from pathlib import Path
    >>> from hookline.engine.atomic_write import atomic_write
    >>> target = Path(tempfile.mkdtemp()) / "notes.txt"
    >>> _ = atomic_write(target, lambda stream: stream.write(b"hello"))
    >>> target.read_text()
    'hello'
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO


def _umask() -> int:
    """The process umask, read without changing it where the platform allows."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dir(directory: Path) -> None:
    """Flush a directory entry change (a rename) to disk, where the OS allows it."""
    if os.name == "nt":  # directories cannot be opened for fsync on Windows
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some file systems do not support fsync on directories
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, write: Callable[[IO[bytes]], None]) -> Path:
    """Write ``path`` through a temp file in its folder: write, flush, fsync, replace,
    fsync the folder. On failure the temp file is removed and ``path`` is untouched."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        # mkstemp creates 0600 files; give the result the permissions a plain open() would.
        with contextlib.suppress(OSError):
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)
    return path
