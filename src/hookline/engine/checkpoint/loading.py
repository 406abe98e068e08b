"""Loading checkpoints safely and finding the one to resume from.

* :func:`load_checkpoint_file` verifies the file's checksum, loads it with
  ``torch.load(weights_only=True)`` and turns every way that can fail into a
  :class:`CheckpointError` that names the file and says why. Loading for the
  weights only (``for_weights``), it also reads another library's checkpoint
  (MMEngine's, whose message hub ``weights_only`` refuses): its tensors, with
  the foreign objects skipped (:mod:`.foreign`).
* :func:`resumable_checkpoints` yields the checkpoints of a folder that load,
  newest first, skipping (with a warning) any that do not;
  :func:`find_resumable` is its first one.

Example::

    >>> import tempfile, torch
    >>> from hookline.engine.checkpoint import make_meta, save_atomic, write_latest
    >>> folder = tempfile.mkdtemp()
    >>> path = save_atomic({"meta": make_meta(epoch=1, iteration=45)}, f"{folder}/epoch_1.pth")
    >>> _ = write_latest(folder, path.name)
    >>> found, loaded = find_resumable(folder)
    >>> found.name, loaded["meta"]["iter"]
    ('epoch_1.pth', 45)
"""

from __future__ import annotations

import logging
import pickle
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

import torch

from .atomic import LATEST_FILENAME, read_latest
from .errors import CheckpointError, CheckpointNotFoundError, PathLike
from .foreign import ForeignLoad, library_of, load_skipping_foreign, refused_globals
from .integrity import verify_file

_LOG = logging.getLogger("hookline")


_UNSUPPORTED_GLOBAL = re.compile(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) ([\w.]+)")

#: how to use a checkpoint that is not hookline's, said where one is refused
WEIGHTS_HINT = ("its weights can be loaded with load_from= or load_checkpoint(path, resume=False); "
                "resuming needs a hookline checkpoint")


def _whose(library: str | None) -> str:
    return f"an {library} checkpoint" if library else "a checkpoint of another library"


def _first_line(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _describe_refusal(path: Path | None, first: str, *, hint: bool = True) -> str:
    """``weights_only`` refused ``path`` for the global ``first`` (and maybe others); with
    ``hint``, how its weights can be loaded."""
    names = refused_globals(path, first) if path is not None else [first]
    shown = [n.removeprefix("builtins.") for n in names if not n.startswith("numpy")]
    numpy = "numpy arrays or scalars" if len(shown) < len(names) else ""
    if len(shown) == 1 and not numpy:
        article = "an" if shown[0].rsplit(".", 1)[-1][:1].lower() in "aeiou" else "a"
        listing = f"{article} {shown[0]} object"
    else:
        more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
        listing = " and ".join(filter(None, [", ".join(shown[:3]) + more, numpy]))
        listing = f"objects of {listing}" if shown else listing
    whose = _whose(library_of(names))
    return f"holds {listing}, which weights_only loading refuses ({whose}" + (
        f"? {WEIGHTS_HINT})" if hint else ")")


def _describe_load_failure(exc: BaseException, path: Path | None = None) -> str:
    """A short reason, in words, for a ``torch.load`` failure (of ``path``, when given: the
    refused globals are then all named)."""
    message = str(exc)
    match = _UNSUPPORTED_GLOBAL.search(message)
    if match:
        return _describe_refusal(path, match.group(1))
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


def _validate(path: Path, obj: Any, required_keys: Iterable[str], *, for_weights: bool = False
              ) -> dict[str, Any]:
    weights = isinstance(obj, dict) and isinstance(obj.get("state_dict"), Mapping)
    if for_weights and weights:  # any library's checkpoint: only its state_dict is used
        return _check_required(path, obj, required_keys)
    if for_weights and _is_bare_state_dict(obj):  # torch.save(model.state_dict()), as MMEngine
        return _check_required(path, {"state_dict": obj}, required_keys)
    if not isinstance(obj, dict):
        return _fail(path, f"not a hookline checkpoint: it holds a {type(obj).__name__}, not a dict")
    meta = obj.get("meta")
    if not isinstance(meta, dict):
        keys = ", ".join(repr(k) for k in list(obj)[:8]) + (", ..." if len(obj) > 8 else "")
        nested = [k for k in ("model", "model_state_dict", "net", "weights")
                  if isinstance(obj.get(k), Mapping)]
        hint = (f"; its weights look like they are under {nested[0]!r}: load "
                f"torch.load(path)[{nested[0]!r}] into the model yourself" if nested else "")
        if _is_bare_state_dict(obj):  # torch.save(model.state_dict())
            hint += ("; it holds weights only (a torch.save(model.state_dict()) file), which "
                     "cannot resume a run: use load_from= to load the weights only (or "
                     "load_checkpoint(path, resume=False))")
        return _fail(
            path, f"not a hookline checkpoint: no 'meta' dict (foreign format? top-level keys: "
                  f"{keys}){hint}"
        )
    if "hookline_version" not in meta:
        return _fail(
            path,
            "not a hookline checkpoint: its 'meta' has no 'hookline_version' (written by another library?"
            + (f" {WEIGHTS_HINT})" if weights else ")"),
        )
    return _check_required(path, obj, required_keys)


def _is_bare_state_dict(obj: Any) -> bool:
    """A plain ``torch.save(model.state_dict())``: string keys, tensor values only."""
    return isinstance(obj, dict) and bool(obj) and all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items())


def _check_required(path: Path, obj: dict[str, Any], required_keys: Iterable[str]) -> dict[str, Any]:
    missing = [k for k in required_keys if k not in obj]
    if missing:
        return _fail(path, f"missing keys: {', '.join(repr(k) for k in missing)}")
    return obj


def _fail(path: Path, reason: str) -> NoReturn:
    raise CheckpointError(path, reason)


_POINTER_SIZE = 4096  # a 'latest' pointer holds one file name


def _refuse_pointer(path: Path) -> None:
    """A :class:`CheckpointError` for a run's ``latest`` pointer file, naming the checkpoint
    it points to (none when it cannot be read as a pointer: then it loads as any file)."""
    try:
        target = read_latest(path.parent)
    except CheckpointError:
        return
    if target is None:
        return
    missing = "" if target.is_file() else ", which is missing"
    raise CheckpointError(path, f"is the 'latest' pointer file, not a checkpoint: it names "
                                f"the run's newest checkpoint, {target}{missing}; pass that path, "
                                "or resume='auto' (hookline train ... --resume auto)")


def load_checkpoint_file(
    path: PathLike,
    map_location: Any = "cpu",
    *,
    required_keys: Iterable[str] = (),
    mmap: bool = False,
    verify: bool = True,
    for_weights: bool = False,
    logger: logging.Logger | None = None,
) -> dict[str, Any]:
    """Load a hookline checkpoint with ``torch.load(..., weights_only=True)``.

    With ``verify`` (the default) the file's checksum is checked
    (:func:`~hookline.engine.checkpoint.integrity.verify_file`: one extra read
    of the file, done on a thread while ``torch.load`` reads a file of 4 MiB
    or more; files written without one, by earlier versions, load as they
    are). Every failure is a :class:`CheckpointError` naming the file and the
    reason, with the original exception as ``__cause__``: a missing file
    (:class:`CheckpointNotFoundError`, also a :class:`FileNotFoundError`), a
    checksum that does not match (a byte changed since the file was written), an
    empty, truncated or corrupt file, a file that is not a ``torch.save`` file,
    one holding objects that ``weights_only`` refuses (a pickled custom class),
    one that is not a dict with a ``"meta"`` dict holding
    ``"hookline_version"`` (a foreign checkpoint), or one that lacks any of
    ``required_keys``.

    ``map_location`` is passed to ``torch.load``; ``mmap=True`` maps tensor
    data from the file instead of reading it (zip-format files only).

    ``for_weights``: the caller uses the ``state_dict`` only (``load_from=``,
    ``load_checkpoint(path, resume=False)``), so any dict with a
    ``"state_dict"`` dict is accepted, hookline's or not; and a file that
    ``weights_only`` refuses only for the objects of foreign classes it holds
    (an MMEngine checkpoint's message hub) is read again with
    :func:`~hookline.engine.checkpoint.foreign.load_skipping_foreign`: its
    tensors load, every foreign object is a placeholder (none of its code
    runs), and one warning on ``logger`` (default: the ``"hookline"``
    logger) names the file and what was skipped.

    Example::

        >>> import tempfile, torch
        >>> from hookline.engine.checkpoint import make_meta, save_atomic
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
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise CheckpointError(path, _describe_load_failure(exc)) from exc
    if path.is_dir():
        raise CheckpointError(path, "is a directory, not a file")
    if size == 0:
        raise CheckpointError(path, "empty file (0 bytes; a save that never completed?)")
    if path.name == LATEST_FILENAME and size < _POINTER_SIZE:
        _refuse_pointer(path)
    check = _Verification(path, in_background=size >= _VERIFY_ON_THREAD) if verify else None
    try:
        obj = torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except Exception as exc:
        if check is not None:
            check.result()  # a damaged file is reported as damaged, whatever torch.load said
        if mmap and "mmap can only be used" in str(exc):
            # an old-format (non-zip) file: load it the ordinary way
            return load_checkpoint_file(path, map_location, required_keys=required_keys,
                                        verify=False, for_weights=for_weights, logger=logger)
        if for_weights and _UNSUPPORTED_GLOBAL.search(str(exc)):
            return _load_weights_of_foreign(path, map_location, exc, required_keys, mmap=mmap,
                                            logger=logger or _LOG)
        raise CheckpointError(path, _describe_load_failure(exc, path)) from exc
    if check is not None:
        check.result()
    return _validate(path, obj, required_keys, for_weights=for_weights)


def _load_weights_of_foreign(path: Path, map_location: Any, refusal: Exception,
                             required_keys: Iterable[str], *, mmap: bool,
                             logger: logging.Logger) -> dict[str, Any]:
    """``path``, which ``weights_only`` refused with ``refusal`` for a foreign global, read
    again skipping the foreign objects; a :class:`CheckpointError` unless that gives a dict
    with a ``"state_dict"`` dict."""
    try:
        loaded: ForeignLoad = load_skipping_foreign(path, map_location, mmap=mmap)
    except Exception as exc:
        match = _UNSUPPORTED_GLOBAL.search(str(refusal))
        refused = _describe_refusal(path, match.group(1) if match else "?", hint=False)
        raise CheckpointError(path, f"{refused}, and reading its tensors with those objects skipped "
                                    f"failed too ({type(exc).__name__}: {_first_line(exc)})") from refusal
    checkpoint = loaded.checkpoint
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("state_dict"), Mapping):
        raise CheckpointError(path, f"holds objects that weights_only loading refuses "
                                    f"({loaded.summary()}) and no 'state_dict' dict of weights beside "
                                    "them: not a checkpoint hookline can load weights from") from refusal
    if loaded.skipped:  # numpy values and the like read as they are: nothing to say
        logger.warning("%s: %s; kept its weights, skipped %s", path, _whose(loaded.library()),
                       loaded.summary())
    return _check_required(path, checkpoint, required_keys)


_VERIFY_ON_THREAD = 4 << 20  # files from this size on are re-hashed while torch.load reads them


class _Verification:
    """:func:`verify_file` of ``path``, now, or on a thread (hashing and reading release the
    GIL, so a large file is verified while ``torch.load`` reads it); :meth:`result` raises
    what it found."""

    def __init__(self, path: Path, *, in_background: bool) -> None:
        self._path = path
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if in_background:
            self._thread = threading.Thread(target=self._run, name="hookline-verify", daemon=True)
            self._thread.start()
        else:
            self._run()

    def _run(self) -> None:
        try:
            verify_file(self._path)
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def result(self) -> None:
        if self._thread is not None:
            self._thread.join()
        error, self._error = self._error, None
        if isinstance(error, CheckpointError):
            raise error
        if isinstance(error, OSError):
            raise CheckpointError(self._path, _describe_load_failure(error)) from error
        if error is not None:
            raise error


def _iteration_of(checkpoint: dict[str, Any]) -> int:
    value = checkpoint["meta"].get("iter")
    if isinstance(value, bool) or not isinstance(value, int):
        return -1
    return value


def resumable_checkpoints(
    directory: PathLike,
    logger: logging.Logger | None = None,
    *,
    map_location: Any = "cpu",
    failures: list[CheckpointError] | None = None,
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The checkpoints of ``directory`` that load, newest first, as ``(path, checkpoint)``.

    The file named by the ``latest`` pointer comes first. Then every ``*.pth``
    file of the folder (not its subfolders; temp files of interrupted saves
    are dot-files and never match) is examined with a cheap memory-mapped
    load, and they come newest first, ordered by ``meta["iter"]``, then
    whether they hold optimizer state (a weights-only export comes after a
    full checkpoint of the same iteration), then modification time, then name.
    Each is loaded (checksum verified) only when
    the caller asks for the next one. Each file that fails to load is
    reported with a warning on ``logger`` (default: the ``"hookline"``
    logger) naming the file and the reason, and appended to ``failures``.

    Example::

        >>> import tempfile
        >>> list(resumable_checkpoints(tempfile.mkdtemp()))
        []
    """
    log = logger if logger is not None else _LOG
    failed = failures if failures is not None else []
    directory = Path(directory)
    if not directory.is_dir():
        return

    tried: set[Path] = set()
    try:
        latest = read_latest(directory)
    except CheckpointError as exc:
        log.warning("ignoring the checkpoint pointer: %s", exc)
        latest = None
    if latest is not None:
        tried.add(latest)
        try:
            loaded = load_checkpoint_file(latest, map_location)
        except CheckpointError as exc:
            log.warning(
                "skipping checkpoint %s named by %s: %s; looking for another one",
                latest,
                directory / LATEST_FILENAME,
                exc.reason,
            )
            failed.append(exc)
        else:
            yield latest, loaded
            del loaded

    candidates: list[tuple[tuple[int, bool, int, str], Path]] = []
    for path in sorted(directory.glob("*.pth")):
        if path in tried or not path.is_file():
            continue
        try:
            mtime = path.stat().st_mtime_ns
            peeked = load_checkpoint_file(path, "cpu", mmap=True, verify=False)
        except CheckpointError as exc:
            log.warning("skipping checkpoint %s: %s", path, exc.reason)
            failed.append(exc)
            continue
        except OSError as exc:  # vanished or unreadable between listing and stat
            log.warning("skipping checkpoint %s: %s", path, exc)
            continue
        # at one position a file that can resume (optimizer state) beats a weights-only export
        candidates.append(((_iteration_of(peeked), "optimizer" in peeked, mtime, path.name),
                           path))
        del peeked

    for _, path in sorted(candidates, key=lambda c: c[0], reverse=True):
        try:
            loaded = load_checkpoint_file(path, map_location)
        except CheckpointError as exc:
            log.warning("skipping checkpoint %s: %s", path, exc.reason)
            failed.append(exc)
            continue
        yield path, loaded
        del loaded


def find_resumable(
    directory: PathLike,
    logger: logging.Logger | None = None,
    *,
    map_location: Any = "cpu",
) -> tuple[Path, dict[str, Any]] | None:
    """The newest checkpoint of ``directory`` that loads, as ``(path, checkpoint)``, or
    ``None`` if the folder does not exist or no file in it loads.

    The first of :func:`resumable_checkpoints` (same order, same warnings).

    Example::

        >>> import tempfile
        >>> find_resumable(tempfile.mkdtemp()) is None
        True
    """
    return next(resumable_checkpoints(directory, logger, map_location=map_location), None)
