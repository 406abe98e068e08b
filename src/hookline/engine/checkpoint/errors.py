"""The errors every checkpoint problem becomes: one line naming the file and why.

:class:`CheckpointError` for a file that cannot be loaded or applied to the
run, :class:`CheckpointWriteError` for one that cannot be written (disk full,
permissions, ...).

Example::

    >>> from hookline.engine.checkpoint import CheckpointError
    >>> CheckpointError("a.pth", "truncated").reason
    'truncated'
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

PathLike = str | os.PathLike[str]


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

    #: the message, from ``path`` and ``reason``
    template = "cannot load checkpoint {path!r}: {reason}"

    def __init__(self, path: PathLike, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(self.template.format(path=str(path), reason=reason))

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across processes
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


class CheckpointWriteError(CheckpointError, OSError):
    """A checkpoint could not be written: the disk is full, the folder is read-only, ...

    The message names the file and the cause (``strerror`` and the errno name);
    the original :class:`OSError` is ``__cause__``, and its ``errno`` is this
    error's (it is an :class:`OSError` too). A failed write never replaces an
    existing file, so the checkpoints written before stay intact.

    Example::

        >>> import errno
        >>> print(CheckpointWriteError.from_os_error("runs/epoch_3.pth",
        ...                                          OSError(errno.ENOSPC, "No space left on device")))
        cannot write checkpoint 'runs/epoch_3.pth': No space left on device (ENOSPC)
    """

    template = "cannot write checkpoint {path!r}: {reason}"

    @classmethod
    def from_os_error(cls, path: PathLike, exc: OSError, note: str = "") -> CheckpointWriteError:
        """The error for ``exc`` raised while writing ``path``; ``note`` is appended."""
        cause = exc.strerror or str(exc) or type(exc).__name__
        code = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
        error = cls(path, (f"{cause} ({code})" if code else cause) + note)
        error.errno, error.strerror, error.filename = exc.errno, exc.strerror, str(path)
        return error


class NoResumableCheckpointError(CheckpointError):
    """``resume="auto"`` found hookline checkpoints in the work dir and none can be resumed.

    Raised instead of starting afresh, which would overwrite them by name: the
    message lists the first few files and why each was refused, and says what
    to do. ``path`` is the work dir.

    Example::

        >>> error = NoResumableCheckpointError.from_failures(
        ...     "runs/a", [CheckpointError("runs/a/epoch_2.pth", "damaged")])
        >>> print(error.reason[:79])
        resume='auto' found 1 checkpoint and none can be resumed (epoch_2.pth: damaged)
    """

    template = "cannot resume from {path!r}: {reason}"

    @classmethod
    def from_failures(cls, directory: PathLike, failures: list[CheckpointError],
                      shown: int = 3) -> NoResumableCheckpointError:
        """The error for ``failures``, newest first; the first ``shown`` reasons are spelled out
        (files that failed for the same reason are listed together)."""
        by_reason: dict[str, list[str]] = {}
        for failure in failures:
            by_reason.setdefault(failure.reason, []).append(failure.path.name)
        listed = "; ".join(f"{', '.join(names)}: {_clip(reason)}"
                           for reason, names in list(by_reason.items())[:shown])
        if len(by_reason) > shown:
            listed += f"; and {len(by_reason) - shown} more"
        count = f"{len(failures)} checkpoint{'s' if len(failures) != 1 else ''}"
        return cls(directory, f"resume='auto' found {count} and none can be resumed ({listed}); "
                              "nothing was deleted or overwritten: resume one with resume=PATH "
                              "(--resume PATH) to see its error in full, move them out of the work "
                              "dir to start afresh, or use another work dir")


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
