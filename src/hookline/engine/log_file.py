"""``log.txt``: the run's log file handler, and the error a log file that cannot be written
raises (:class:`LogWriteError`, the disk full or the folder read-only).

Example::

    >>> import errno
    >>> print(LogWriteError.from_os_error("runs/log.txt", OSError(errno.EROFS, "Read-only")))
    cannot write 'runs/log.txt': Read-only (EROFS)
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["LogWriteError", "RunLogFile"]


class LogWriteError(OSError):
    """A run's log file (``metrics.jsonl``, ``log.txt``) could not be written: the disk is
    full, the folder is read-only, ...

    The message names the file and the cause (``strerror`` and the errno name), as a
    :class:`~hookline.engine.checkpoint.CheckpointWriteError` does for a checkpoint; the
    original :class:`OSError` is ``__cause__`` and its ``errno`` is this error's. The
    records written before stay in the file.

    Example::

        >>> import errno
        >>> print(LogWriteError.from_os_error("runs/metrics.jsonl",
        ...                                   OSError(errno.ENOSPC, "No space left on device")))
        cannot write 'runs/metrics.jsonl': No space left on device (ENOSPC)
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"cannot write {str(path)!r}: {reason}")
        self.path = Path(path)
        self.reason = reason
        self.filename = str(path)

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across processes
        return (type(self), (self.path, self.reason))

    @classmethod
    def from_os_error(cls, path: str | os.PathLike[str], exc: OSError) -> LogWriteError:
        """The error for ``exc``, raised while writing ``path``."""
        cause = exc.strerror or str(exc) or type(exc).__name__
        code = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
        error = cls(path, f"{cause} ({code})" if code else cause)
        error.errno, error.strerror = exc.errno, exc.strerror
        return error


class RunLogFile(logging.FileHandler):
    """``log.txt``, created (with its folder) by the first line logged: a Runner that is
    built but never runs anything writes nothing.

    A line that cannot be written (the disk is full, the folder is read-only)
    ends the file's part in the run, once: one message on stderr naming the
    file and the cause, then the handler drops every later line (the console
    and other handlers still get them) and closing it raises nothing. It does
    not raise into the code that logged: a log line never fails a run (a
    ``metrics.jsonl`` that cannot be written does, see
    :class:`~hookline.hooks.LoggerHook`). ``failure`` is that
    :class:`LogWriteError` (None while the file is written)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8", delay=True)
        #: why the file stopped being written (None: it is written)
        self.failure: LogWriteError | None = None

    def _open(self) -> Any:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()

    def emit(self, record: logging.LogRecord) -> None:
        if self.failure is not None:
            return
        try:  # opening the file (the first line) is not inside logging's own try
            super().emit(record)
        except OSError as exc:
            self._fail(exc)

    def handleError(self, record: logging.LogRecord) -> None:
        """A failed write of the file stops it, once (see the class); anything else is
        logging's."""
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            self._fail(exc)
            return
        super().handleError(record)

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            self._fail(exc)

    def close(self) -> None:
        try:
            super().close()
        except OSError as exc:  # the last buffered line could not be flushed
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        if self.failure is not None:
            return
        self.failure = LogWriteError.from_os_error(self.baseFilename, exc)
        stream, self.stream = self.stream, None
        if stream is not None:
            with contextlib.suppress(OSError):  # its buffer cannot be written: dropped
                stream.close()
        with contextlib.suppress(Exception):  # stderr itself may be gone
            print(f"hookline: {self.failure}; later lines of this run are not "
                  "written to it (the console, if any, still shows them)", file=sys.stderr, flush=True)
