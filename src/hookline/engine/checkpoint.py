"""Checkpoint files: atomic writes, safe loads, and finding the one to resume from.

Pure functions that the Runner calls; they know nothing about models or hooks.

* :func:`save_atomic` writes a file so that a crash at any moment leaves
  either the old file or the new one, never half of one.
* :func:`write_latest` / :func:`read_latest` keep a small text file ``latest``
  in the checkpoint folder naming the newest checkpoint.
* :func:`load_checkpoint_file` loads with ``torch.load(weights_only=True)``
  and turns every way that can fail into a :class:`CheckpointError` that names
  the file and says why.
* :func:`find_resumable` picks the newest checkpoint of a folder that loads,
  skipping (with a warning) any that do not.

A hookline checkpoint is a ``dict`` whose ``"meta"`` entry is a dict holding
``"hookline_version"`` (see :func:`make_meta`); everything in it must be
tensors and plain containers so that ``weights_only`` loading accepts it
(:func:`to_plain` converts numpy values; :func:`check_weights_only` finds the
ones that would be refused).

Example::

    >>> import tempfile, torch
    >>> from hookline.engine.checkpoint import (
    ...     make_meta, save_atomic, write_latest, find_resumable)
    >>> folder = tempfile.mkdtemp()
    >>> ckpt = {"meta": make_meta(epoch=1, iteration=45), "model": {"w": torch.ones(2)}}
    >>> path = save_atomic(ckpt, f"{folder}/epoch_1.pth")
    >>> _ = write_latest(folder, path.name)
    >>> found, loaded = find_resumable(folder)
    >>> found.name, loaded["meta"]["iter"]
    ('epoch_1.pth', 45)
"""

from __future__ import annotations

import errno
import logging
import os
import pickle
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from .atomic_write import atomic_write
from .checkpoint_content import check_weights_only, make_meta, to_plain

__all__ = [
    "LATEST_FILENAME",
    "CheckpointError",
    "CheckpointNotFoundError",
    "check_weights_only",
    "find_resumable",
    "load_checkpoint_file",
    "make_meta",
    "read_latest",
    "save_atomic",
    "to_plain",
    "write_latest",
]

#: Name of the pointer file that names the newest checkpoint of a folder.
LATEST_FILENAME = "latest"

_LOG = logging.getLogger("hookline")

PathLike = str | os.PathLike


# --------------------------------------------------------------------------- errors


class CheckpointError(Exception):
    """A file that is not a loadable hookline checkpoint.

    The message names the file and says why (truncated, not a torch file,
    refused by ``weights_only`` loading, not a hookline checkpoint, missing
    keys, ...). The original exception, if any, is ``__cause__``.

    Attributes:
        path: the file.
        reason: why it cannot be loaded, in words.

    Example::

        >>> str(CheckpointError("runs/epoch_3.pth", "truncated or corrupt"))
        "cannot load checkpoint 'runs/epoch_3.pth': truncated or corrupt"
    """

    def __init__(self, path: PathLike, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"cannot load checkpoint {str(path)!r}: {reason}")

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self):  # picklable across processes
        return (type(self), (self.path, self.reason))


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """The checkpoint file does not exist.

    Both a :class:`CheckpointError` and a :class:`FileNotFoundError`, so either
    ``except`` clause catches it.

    Example::

        >>> from hookline.engine.checkpoint import load_checkpoint_file
        >>> try:
        ...     load_checkpoint_file("/no/such/file.pth")
        ... except FileNotFoundError as exc:
        ...     print(exc)
        cannot load checkpoint '/no/such/file.pth': no such file
    """

    def __init__(self, path: PathLike, reason: str = "no such file") -> None:
        CheckpointError.__init__(self, path, reason)
        self.errno = errno.ENOENT
        self.strerror = reason
        self.filename = str(path)


# --------------------------------------------------------------------------- atomic writes

def save_atomic(obj: dict, path: PathLike, *, check: bool = True) -> Path:
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
    path = Path(path)
    if check:
        check_weights_only(obj)
    return atomic_write(path, lambda stream: torch.save(obj, stream))


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


# --------------------------------------------------------------------------- loading

_UNSUPPORTED_GLOBAL = re.compile(r"Unsupported global: GLOBAL ([\w.]+)")


def _first_line(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _describe_load_failure(exc: BaseException) -> str:
    """A short reason, in words, for a ``torch.load`` failure."""
    message = str(exc)
    match = _UNSUPPORTED_GLOBAL.search(message)
    if match:
        return (
            f"holds a {match.group(1)} object, which weights_only loading refuses "
            "(not a plain-tensor checkpoint; only load files you trust with weights_only=False)"
        )
    if isinstance(exc, pickle.UnpicklingError) or "Weights only load failed" in message:
        detail = (
            message.split("WeightsUnpickler error:", 1)[-1] if "WeightsUnpickler error:" in message else ""
        )
        detail = detail.strip().splitlines()[0] if detail.strip() else _first_line(exc)
        return f"refused by weights_only loading or not a torch.save file ({detail[:160]})"
    if isinstance(exc, EOFError):
        return "truncated (unexpected end of file)"
    if "PytorchStreamReader failed" in message:
        detail = message.split("zip archive:", 1)[-1].split(".", 1)[0].strip()
        return f"truncated or corrupt ({detail or 'bad zip archive'})"
    if isinstance(exc, IsADirectoryError):
        return "is a directory, not a file"
    if isinstance(exc, PermissionError):
        return f"permission denied ({_first_line(exc)})"
    if isinstance(exc, OSError):
        return f"truncated or corrupt ({type(exc).__name__}: {_first_line(exc)})"
    return f"not a torch.save file, or corrupt ({type(exc).__name__}: {_first_line(exc)})"


def _validate(path: Path, obj: Any, required_keys: Iterable[str]) -> dict:
    if not isinstance(obj, dict):
        return _fail(path, f"not a hookline checkpoint: it holds a {type(obj).__name__}, not a dict")
    meta = obj.get("meta")
    if not isinstance(meta, dict):
        keys = ", ".join(repr(k) for k in list(obj)[:8]) + (", ..." if len(obj) > 8 else "")
        return _fail(
            path, f"not a hookline checkpoint: no 'meta' dict (foreign format? top-level keys: {keys})"
        )
    if "hookline_version" not in meta:
        return _fail(
            path,
            "not a hookline checkpoint: its 'meta' has no 'hookline_version' (written by another library?)",
        )
    missing = [k for k in required_keys if k not in obj]
    if missing:
        return _fail(path, f"missing keys: {', '.join(repr(k) for k in missing)}")
    return obj


def _fail(path: Path, reason: str) -> Any:
    raise CheckpointError(path, reason)


def load_checkpoint_file(
    path: PathLike,
    map_location: Any = "cpu",
    *,
    required_keys: Iterable[str] = (),
    mmap: bool = False,
) -> dict:
    """Load a hookline checkpoint with ``torch.load(..., weights_only=True)``.

    Every failure is a :class:`CheckpointError` naming the file and the
    reason, with the original exception as ``__cause__``: a missing file
    (:class:`CheckpointNotFoundError`, also a :class:`FileNotFoundError`), an
    empty, truncated or corrupt file, a file that is not a ``torch.save`` file,
    one holding objects that ``weights_only`` refuses (a pickled custom class),
    one that is not a dict with a ``"meta"`` dict holding
    ``"hookline_version"`` (a foreign checkpoint), or one that lacks any of
    ``required_keys``.

    ``map_location`` is passed to ``torch.load``; ``mmap=True`` maps tensor
    data from the file instead of reading it (zip-format files only).

    Example::

        >>> import tempfile, torch
        >>> path = f"{tempfile.mkdtemp()}/a.pth"
        >>> _ = save_atomic({"meta": make_meta(0, 0), "model": {}}, path)
        >>> sorted(load_checkpoint_file(path, required_keys=["model"]))
        ['meta', 'model']
        >>> _ = save_atomic({"state_dict": {}}, path)
        >>> try:
        ...     load_checkpoint_file(path)
        ... except CheckpointError as exc:
        ...     print(exc.reason)
        not a hookline checkpoint: no 'meta' dict (foreign format? top-level keys: 'state_dict')
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise CheckpointNotFoundError(path) from None
    except OSError as exc:
        raise CheckpointError(path, _describe_load_failure(exc)) from exc
    if path.is_dir():
        raise CheckpointError(path, "is a directory, not a file")
    if size == 0:
        raise CheckpointError(path, "empty file (0 bytes; a save that never completed?)")
    try:
        obj = torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except Exception as exc:
        if mmap and "mmap can only be used" in str(exc):
            # an old-format (non-zip) file: load it the ordinary way
            return load_checkpoint_file(path, map_location, required_keys=required_keys)
        raise CheckpointError(path, _describe_load_failure(exc)) from exc
    return _validate(path, obj, required_keys)


def _iteration_of(checkpoint: dict) -> int:
    value = checkpoint["meta"].get("iter")
    if isinstance(value, bool) or not isinstance(value, int):
        return -1
    return value


def find_resumable(
    directory: PathLike,
    logger: logging.Logger | None = None,
    *,
    map_location: Any = "cpu",
) -> tuple[Path, dict] | None:
    """The newest checkpoint of ``directory`` that loads, as ``(path, checkpoint)``.

    The file named by the ``latest`` pointer is tried first. If there is no
    pointer, or its file does not load, every ``*.pth`` file of the folder
    (not its subfolders; temp files of interrupted saves are dot-files and
    never match) is examined with a cheap memory-mapped load, and they are
    tried newest first, ordered by ``meta["iter"]``, then modification time,
    then name. Each file that fails to load is reported with a warning on
    ``logger`` (default: the ``"hookline"`` logger) naming the file and the
    reason, and the next one is tried. Returns ``None`` if the folder does not
    exist or no file in it loads.

    Example::

        >>> import tempfile
        >>> find_resumable(tempfile.mkdtemp()) is None
        True
    """
    log = logger if logger is not None else _LOG
    directory = Path(directory)
    if not directory.is_dir():
        return None

    tried: set[Path] = set()
    try:
        latest = read_latest(directory)
    except CheckpointError as exc:
        log.warning("ignoring the checkpoint pointer: %s", exc)
        latest = None
    if latest is not None:
        tried.add(latest)
        try:
            return latest, load_checkpoint_file(latest, map_location)
        except CheckpointError as exc:
            log.warning(
                "skipping checkpoint %s named by %s: %s; looking for another one",
                latest,
                directory / LATEST_FILENAME,
                exc.reason,
            )

    candidates: list[tuple[tuple[int, int, str], Path]] = []
    for path in sorted(directory.glob("*.pth")):
        if path in tried or not path.is_file():
            continue
        try:
            mtime = path.stat().st_mtime_ns
            peeked = load_checkpoint_file(path, "cpu", mmap=True)
        except CheckpointError as exc:
            log.warning("skipping checkpoint %s: %s", path, exc.reason)
            continue
        except OSError as exc:  # vanished or unreadable between listing and stat
            log.warning("skipping checkpoint %s: %s", path, exc)
            continue
        candidates.append(((_iteration_of(peeked), mtime, path.name), path))
        del peeked

    for _, path in sorted(candidates, key=lambda c: c[0], reverse=True):
        try:
            return path, load_checkpoint_file(path, map_location)
        except CheckpointError as exc:
            log.warning("skipping checkpoint %s: %s", path, exc.reason)
    return None
