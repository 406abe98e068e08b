"""The Runner's standard ``logging.Logger``: console and ``work_dir/log.txt``.

Each Runner gets its own logger (no global singleton); only the main
process writes to the console and the file. The console handler is a
:class:`ConsoleHandler`: a record logged with ``extra=FILE_ONLY`` goes to
``log.txt`` only, and while a progress bar is on screen the bar's owner
routes console lines through ``handler.writer`` (e.g. ``tqdm.write``) so
lines and bars never overwrite each other.

Example::

    >>> import tempfile, pathlib
    >>> from hookline.engine.logs import make_logger
    >>> work_dir = pathlib.Path(tempfile.mkdtemp())
    >>> logger = make_logger(work_dir, main_process=True, console=False)
    >>> logger.info("hello")
    >>> (work_dir / "log.txt").read_text().strip().endswith("hello")
    True
    >>> close_logger(logger)
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

_COUNTER = itertools.count()
_CURRENT: list[logging.Logger | None] = [None]
FORMAT = "%(asctime)s - hookline - %(levelname)s - %(message)s"
#: ``logger.info(..., extra=FILE_ONLY)``: the record goes to ``log.txt``, not the console
FILE_ONLY = {"console": False}

#: writes one formatted console line (no newline) to the stream it is given
ConsoleWriter = Callable[[str, IO[str]], None]


def _for_console(record: logging.LogRecord) -> bool:
    return getattr(record, "console", True) is not False


class ConsoleHandler(logging.StreamHandler[IO[str]]):
    """The console handler of a Runner's logger (stdout by default).

    It skips records logged with ``extra=FILE_ONLY``. ``writer``, None by
    default (plain ``stream.write``), is replaceable: a progress bar sets it
    to a function that clears the bar, writes the line and redraws the bar,
    and puts the previous writer back when the bar closes. It belongs to
    this handler only, so runners never share it.

    Example::

        >>> import io, logging
        >>> stream = io.StringIO()
        >>> handler = ConsoleHandler(stream)
        >>> logger = logging.getLogger("hookline.doc.console")
        >>> logger.addHandler(handler)
        >>> logger.warning("plain")
        >>> logger.warning("file only", extra=FILE_ONLY)
        >>> handler.writer = lambda line, out: out.write(f"[{line}]\\n")
        >>> logger.warning("routed")
        >>> stream.getvalue()
        'plain\\n[routed]\\n'
        >>> logger.removeHandler(handler)
    """

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__(stream if stream is not None else sys.stdout)
        self.writer: ConsoleWriter | None = None
        self.addFilter(_for_console)

    def emit(self, record: logging.LogRecord) -> None:
        writer = self.writer
        if writer is None:
            super().emit(record)
            return
        try:
            writer(self.format(record), self.stream)
            self.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


def make_logger(work_dir: Path | None, *, main_process: bool, console: bool = True,
                level: int = logging.INFO) -> logging.Logger:
    """A fresh logger named ``hookline.runner.N`` writing to stdout (a
    :class:`ConsoleHandler`) and ``log.txt``."""
    logger = logging.getLogger(f"hookline.runner.{next(_COUNTER)}")
    logger.setLevel(level)
    logger.propagate = False
    if not main_process:
        logger.addHandler(logging.NullHandler())
        return logger
    formatter = logging.Formatter(FORMAT, datefmt="%Y/%m/%d %H:%M:%S")
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(work_dir / "log.txt", encoding="utf-8")
        file_handler.setFormatter(formatter)
        logger.addHandler(file_handler)
    if console:
        console_handler = ConsoleHandler()
        console_handler.setFormatter(formatter)
        logger.addHandler(console_handler)
    return logger


def console_of(logger: logging.Logger) -> ConsoleHandler | None:
    """The :class:`ConsoleHandler` of a Runner's ``logger`` (None without a console:
    another rank, or ``console=False``)."""
    for handler in logger.handlers:
        if isinstance(handler, ConsoleHandler):
            return handler
    return None


def set_current_logger(logger: logging.Logger) -> None:
    """Record ``logger`` as the one of the Runner that runs now (a Runner does it)."""
    _CURRENT[0] = logger


def current_logger() -> logging.Logger | None:
    """The logger of the Runner that ran last (MMEngine's ``MMLogger.get_current_instance``),
    or None before any run."""
    return _CURRENT[0]


def close_logger(logger: logging.Logger) -> None:
    """Close and detach every handler of ``logger`` (files are released)."""
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)
