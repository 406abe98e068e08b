"""Atomic file writes: a crash at any moment leaves the old file or the new one, never half.

The data goes to a temp file (``.<name>.<random>.tmp``) in the target's folder,
is flushed and fsynced, then ``os.replace``-d onto the target, and the folder
is fsynced. :func:`write_checkpoint` is the Runner's one write path (file with
its checksum, then the ``latest`` pointer naming the newest checkpoint of a
folder); a write that fails is one :class:`CheckpointWriteError` naming the
file and the cause. A process killed mid-write leaves its temp file behind:
:func:`remove_temp_files` deletes those when the next run starts.

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
import errno
import logging
import os
import random
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from .content import serialize
from .errors import CheckpointError, CheckpointWriteError, PathLike
from .integrity import write_sealed

#: Name of the pointer file that names the newest checkpoint of a folder.
LATEST_FILENAME = "latest"

_LOG = logging.getLogger("hookline")
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
# what _open_temp creates: 8 random [a-z0-9_] characters
_TEMP_NAME = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp")


_TEMP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"
_TEMP_NAMES = random.Random()  # its own generator: the run's seeded `random` is not touched
_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def _open_temp(path: Path) -> tuple[int, Path]:
    """Create ``.<name>.<8 random characters>.tmp`` next to ``path``, exclusively, with the
    permissions a plain ``open()`` gives (0666 less the umask, applied by the OS)."""
    for _ in range(100):
        tag = "".join(_TEMP_NAMES.choices(_TEMP_CHARS, k=8))
        tmp = path.with_name(f".{path.name}.{tag}.tmp")
        try:
            return os.open(tmp, _OPEN_FLAGS, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temp file name", str(path.parent))


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
    fd, tmp = _open_temp(path)
    try:
        with os.fdopen(fd, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
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
    return atomic_write(Path(path), lambda stream: write_sealed(stream, payload))


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
    if "\n" in text or "\0" in text or Path(text).is_absolute() or ".." in Path(text).parts:
        raise CheckpointError(pointer, f"'latest' pointer does not hold a relative file name: {text[:80]!r}")
    return Path(directory) / text


def write_checkpoint(path: Path, payload: bytes, *, make_room: Iterable[Path] = (),
                     logger: logging.Logger | None = None, point_latest: bool = True) -> Path:
    """Write serialised checkpoint bytes to ``path`` atomically, with their checksum
    (:mod:`~hookline.engine.checkpoint.integrity`), then point ``latest`` at it
    (``point_latest=False``: not, for a file that cannot resume a run, such as a
    weights-only export).

    The one write path of the Runner: in the foreground, and on the background
    writer thread (:class:`~hookline.engine.checkpoint.CheckpointWriter`).
    When the disk is full (``ENOSPC``, ``EDQUOT``) and ``make_room`` names
    files (the checkpoints that keep-N deletes after this write anyway), they
    are deleted first, with a warning on ``logger``, and the write is tried
    once more. Any failure is a :class:`CheckpointWriteError` naming ``path``
    and the cause; an existing ``path`` and every other file stay as they were.

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
    log = logger if logger is not None else _LOG
    spare = [Path(p) for p in make_room if Path(p) != path]
    try:
        atomic_write(path, lambda stream: write_sealed(stream, payload))
    except OSError as exc:
        if exc.errno not in _NO_SPACE or not any(p.exists() for p in spare):
            raise CheckpointWriteError.from_os_error(path, exc) from exc
        freed = _remove_files(spare)
        log.warning("disk full writing %s: deleted %s (due to go under max_keep_ckpts after this "
                    "write) to make room, then tried again", path, ", ".join(freed))
        try:
            atomic_write(path, lambda stream: write_sealed(stream, payload))
        except OSError as again:
            raise CheckpointWriteError.from_os_error(
                path, again, f"; deleting {', '.join(freed)} (over max_keep_ckpts) did not make "
                             "enough room") from again
    if not point_latest:
        return path
    try:
        write_latest(path.parent, path.name)
    except OSError as exc:
        raise CheckpointWriteError.from_os_error(
            path.parent / LATEST_FILENAME, exc,
            f"; {path.name} itself was written (resume='auto' still finds it)") from exc
    return path


def _remove_files(paths: Iterable[Path]) -> list[str]:
    removed = []
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path.name)
    return removed


def is_temp_file_name(name: str) -> bool:
    """Whether ``name`` is the temp file of an atomic write of a checkpoint (``*.pth``) or of
    the ``latest`` pointer: what a process killed mid-write leaves behind.

    Example::

        >>> is_temp_file_name(".epoch_3.pth.k2x_9abz.tmp"), is_temp_file_name(".notes.txt.k2x_9abz.tmp")
        (True, False)
    """
    match = _TEMP_NAME.fullmatch(name)
    return match is not None and (match["name"].endswith(".pth")
                                  or match["name"] == LATEST_FILENAME)


def remove_temp_files(directory: PathLike) -> list[Path]:
    """Delete the temp files that interrupted checkpoint writes left in ``directory``.

    Only names :func:`is_temp_file_name` accepts are touched (not subfolders);
    returns the deleted paths. Call it when a run starts, before it writes:
    the temp files of a write in progress in another process would go too.

    Example::

        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / ".iter_9.pth.ab12cd34.tmp").write_bytes(b"half a checkpoint")
        >>> [p.name for p in remove_temp_files(folder)], list(folder.iterdir())
        (['.iter_9.pth.ab12cd34.tmp'], [])
    """
    directory = Path(directory)
    removed: list[Path] = []
    if not directory.is_dir():
        return removed
    for path in sorted(directory.iterdir()):
        if is_temp_file_name(path.name) and path.is_file():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed
