"""Atomic file writes: a crash at any moment leaves the old file or the new one, never half.

The data goes to a temp file (``.<name>.<random>.tmp``) in the target's folder,
is flushed and fsynced, then ``os.replace``-d onto the target, and the folder
is fsynced. :func:`write_checkpoint` is the Runner's one write path (file,
then the ``latest`` pointer naming the newest checkpoint of a folder).

Example::

    >>> import tempfile
    >>> from pathlib import Path
    >>> from hookline.engine.checkpoint.atomic import atomic_write
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
from typing import IO, Any

from .content import serialize
from .errors import CheckpointError, PathLike

#: Name of the pointer file that names the newest checkpoint of a folder.
LATEST_FILENAME = "latest"


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


def atomic_write(path: Path, write: Callable[[IO[bytes]], object]) -> Path:
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


def save_atomic(obj: dict[str, Any], path: PathLike, *, check: bool = True) -> Path:
    """``torch.save`` ``obj`` to ``path`` atomically; return ``path`` as a :class:`Path`.

    The data goes to a temp file (``.<name>.<random>.tmp``) in the same folder,
    which is flushed and fsynced, then ``os.replace``-d onto ``path``, and the
    folder is fsynced. If anything fails (or the process dies) the temp file is
    removed (or left as a dot-file that :func:`find_resumable` ignores) and an
    existing ``path`` is untouched. The parent folder is created if needed.

    With ``check`` (the default), :func:`check_weights_only` first makes sure
    the file will load with ``weights_only=True``; it raises :class:`TypeError`
    naming the offending entry, before anything is written.

    Example::

        >>> import tempfile, torch
        >>> folder = tempfile.mkdtemp()
        >>> save_atomic({"w": torch.zeros(2)}, f"{folder}/sub/a.pth").name
        'a.pth'
    """
    payload = serialize(obj) if check else serialize(obj, check=False)
    return atomic_write(Path(path), lambda stream: stream.write(payload))


def write_latest(directory: PathLike, filename: PathLike) -> Path:
    """Atomically write the pointer file ``<directory>/latest`` naming ``filename``.

    ``filename`` is stored relative to ``directory`` (an absolute path must lie
    inside it), so the folder can be moved. Returns the pointer file's path.

    Example::

        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> _ = write_latest(folder, "epoch_3.pth")
        >>> read_latest(folder).name
        'epoch_3.pth'
    """
    directory = Path(directory)
    target = Path(filename)
    if target.is_absolute():
        try:
            target = target.relative_to(directory.absolute())
        except ValueError:
            raise ValueError(
                f"write_latest: {str(filename)!r} is not inside the checkpoint folder {str(directory)!r}"
            ) from None
    name = target.as_posix()
    if name in ("", ".") or ".." in target.parts:
        raise ValueError(f"write_latest: {str(filename)!r} does not name a file inside {str(directory)!r}")
    data = (name + "\n").encode("utf-8")
    return atomic_write(directory / LATEST_FILENAME, lambda stream: stream.write(data))


def read_latest(directory: PathLike) -> Path | None:
    """The checkpoint that ``<directory>/latest`` names, or ``None`` if there is no pointer.

    The returned path is ``directory / name``; the file it names may not exist
    (any longer). A pointer file that cannot be read as text raises
    :class:`CheckpointError` naming the pointer.

    Example::

        >>> import tempfile
        >>> read_latest(tempfile.mkdtemp()) is None
        True
    """
    pointer = Path(directory) / LATEST_FILENAME
    try:
        text = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(pointer, f"unreadable 'latest' pointer ({type(exc).__name__}: {exc})") from exc
    if not text:
        return None
    if "\n" in text or Path(text).is_absolute() or ".." in Path(text).parts:
        raise CheckpointError(pointer, f"'latest' pointer does not hold a relative file name: {text[:80]!r}")
    return Path(directory) / text


def write_checkpoint(path: Path, payload: bytes) -> Path:
    """Write serialised checkpoint bytes to ``path`` atomically, then point ``latest`` at it.

    The one write path of the Runner: in the foreground, and on the background
    writer thread (:class:`~hookline.engine.checkpoint.CheckpointWriter`).

    Example::

        >>> import tempfile, torch
        >>> from pathlib import Path
        >>> from hookline.engine.checkpoint import serialize
        >>> folder = Path(tempfile.mkdtemp())
        >>> write_checkpoint(folder / "a.pth", serialize({"w": torch.ones(1)})).name
        'a.pth'
        >>> read_latest(folder).name
        'a.pth'
    """
    atomic_write(path, lambda stream: stream.write(payload))
    write_latest(path.parent, path.name)
    return path
