"""The Runner's standard ``logging.Logger``: console and ``work_dir/log.txt``.

Each Runner gets its own logger (no global singleton); only the main
process writes to the console and the file. The console handler is a
:class:`ConsoleHandler`: a record logged with ``extra=FILE_ONLY`` goes to
``log.txt`` only, and while a progress bar is on screen the bar's owner
routes console lines through ``handler.writer`` (e.g. ``tqdm.write``) so
lines and bars never overwrite each other.

The main process's logger also owns a :class:`~hookline.engine.log_writer.LogWriter`
(:func:`writer_of`): :func:`log_queued` hands a line to it, so the caller
pays one enqueue and the writer thread formats and writes it. A record
logged the ordinary way (``logger.info(...)``, from any thread) first waits
for the writer's queue, so every line keeps its order; :func:`flush_logger`
waits too.

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

import contextlib
import itertools
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .log_file import RunLogFile
from .log_writer import LogWriter

_COUNTER = itertools.count()
_CURRENT: list[logging.Logger | None] = [None]
_CUT: list[bool] = [False]  # a console handler's reader went away (see ConsoleHandler)
FORMAT = "%(asctime)s - hookline - %(levelname)s - %(message)s"
#: ``logger.info(..., extra=FILE_ONLY)``: the record goes to ``log.txt``, not the console
FILE_ONLY = {"console": False}

_TEXT = "hookline_text"  # a LogRecord attribute: (the LineFormatter, the text it made)
#: writes one formatted console line (no newline) to the stream it is given
ConsoleWriter = Callable[[str, IO[str]], None]


def _for_console(record: logging.LogRecord) -> bool:
    return getattr(record, "console", True) is not False


class ConsoleHandler(logging.StreamHandler[IO[str]]):
    """The console handler of a Runner's logger (by default ``sys.stdout``, looked up at
    each line, so a redirection made after the Runner was built is followed).

    It skips records logged with ``extra=FILE_ONLY``. ``writer``, None by
    default (plain ``stream.write``), is replaceable: a progress bar sets it
    to a function that clears the bar, writes the line and redraws the bar,
    and puts the previous writer back when the bar closes. It belongs to
    this handler only, so runners never share it.

    When the stream's reader goes away (``hookline train ... | head``: a
    ``BrokenPipeError``), the handler detaches quietly, once: no logging
    traceback, the stream's descriptor is pointed at ``os.devnull`` so later
    writes to it (the command's summary) do not fail either, ``log.txt``
    goes on, and :func:`console_cut` says so.

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
        self._follows_stdout = stream is None
        self.writer: ConsoleWriter | None = None
        self.addFilter(_for_console)

    @property
    def stream(self) -> IO[str]:
        """Without a stream given: ``sys.stdout`` as it is at each line (a notebook cell's,
        a ``redirect_stdout`` block's), not the one of when the handler was made."""
        if self._follows_stdout:
            return sys.stdout
        return self._stream

    @stream.setter
    def stream(self, value: IO[str]) -> None:
        """A stream assigned (``handler.stream = ...``, ``setStream``) is kept as it is."""
        self._stream = value
        self._follows_stdout = False

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

    def handleError(self, record: logging.LogRecord) -> None:
        """A broken pipe detaches the handler (see the class); anything else is logging's."""
        if isinstance(sys.exc_info()[1], BrokenPipeError):
            self._detach()
            return
        super().handleError(record)

    def _detach(self) -> None:
        _CUT[0] = True
        self.addFilter(lambda _record: False)  # nothing more to this console
        with contextlib.suppress(Exception):  # the stream's buffer may hold more: drop it too
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)


def console_cut() -> bool:
    """Whether a Runner's console stream lost its reader (a broken pipe) in this process.

    Example::

        >>> console_cut()
        False
    """
    return _CUT[0]


class LineFormatter(logging.Formatter):
    """The Runner's formatter (``FORMAT``): the file and console handlers share one, so a
    record is formatted once for both, and the time stamp is made once per second.

    Example::

        >>> record = logging.makeLogRecord({"msg": "hi", "levelname": "INFO", "created": 0.0})
        >>> formatter = LineFormatter()
        >>> formatter.format(record) is formatter.format(record)  # the second is the first
        True
    """

    def __init__(self) -> None:
        super().__init__(FORMAT, datefmt="%Y/%m/%d %H:%M:%S")
        self._stamp: tuple[int, str] = (-1, "")  # (second, its text): one tuple, thread-safe

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        second = int(record.created)
        stamp = self._stamp
        if stamp[0] != second:
            stamp = self._stamp = (second, super().formatTime(record, datefmt))
        return stamp[1]

    def format(self, record: logging.LogRecord) -> str:
        done = record.__dict__.get(_TEXT)
        if done is not None and done[0] is self:
            return str(done[1])
        text = super().format(record)
        record.__dict__[_TEXT] = (self, text)
        return text


class _WriterFirst(logging.Filter):
    """The logger filter that makes a record logged the ordinary way wait for the lines
    queued before it (on the writer thread itself it passes at once)."""

    def __init__(self, writer: LogWriter) -> None:
        super().__init__()
        self.writer = writer

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: ARG002  (logging's signature)
        self.writer.wait()
        return True


def make_logger(work_dir: Path | None, *, main_process: bool, console: bool = True,
                level: int | None = None) -> logging.Logger:
    """A fresh logger named ``hookline.runner.N`` writing to stdout (a
    :class:`ConsoleHandler`) and ``log.txt``, with a writer thread for :func:`log_queued`.

    Without ``level`` it has no level of its own: it follows the ``"hookline"`` logger,
    which is set to INFO here unless it has a level already, so
    ``logging.getLogger("hookline").setLevel(logging.WARNING)`` quiets every Runner (its
    console and ``log.txt`` lines alike), before or after it is built.
    """
    package = logging.getLogger("hookline")
    if package.level == logging.NOTSET:
        package.setLevel(logging.INFO)
    logger = logging.getLogger(f"hookline.runner.{next(_COUNTER)}")
    if level is not None:
        logger.setLevel(level)
    logger.propagate = False
    if not main_process:
        logger.addHandler(logging.NullHandler())
        return logger
    logger.addFilter(_WriterFirst(LogWriter(f"hookline-log-writer-{logger.name}")))
    formatter = LineFormatter()
    if work_dir is not None:
        file_handler = RunLogFile(work_dir / "log.txt")
        file_handler.setFormatter(formatter)
        logger.addHandler(file_handler)
    if console:
        console_handler = ConsoleHandler()
        console_handler.setFormatter(formatter)
        logger.addHandler(console_handler)
    return logger


def log_file_started(logger: logging.Logger) -> bool:
    """Whether ``logger`` has written to its ``log.txt`` yet (a :class:`RunLogFile` opens
    the file at its first line)."""
    return any(isinstance(handler, RunLogFile) and handler.stream is not None
               for handler in logger.handlers)


def console_of(logger: logging.Logger) -> ConsoleHandler | None:
    """The :class:`ConsoleHandler` of a Runner's ``logger`` (None without a console:
    another rank, or ``console=False``)."""
    for handler in logger.handlers:
        if isinstance(handler, ConsoleHandler):
            return handler
    return None


def writer_of(logger: logging.Logger) -> LogWriter | None:
    """The :class:`~hookline.engine.log_writer.LogWriter` of a Runner's ``logger``
    (None on other ranks, or for a logger :func:`make_logger` did not make)."""
    for log_filter in logger.filters:
        if isinstance(log_filter, _WriterFirst):
            return log_filter.writer
    return None


def log_queued(logger: logging.Logger, level: int, msg: str | Callable[[], str]) -> None:
    """Log ``msg`` (no ``%`` arguments; or a function that returns it, called on the writer
    thread) at ``level`` from ``logger``'s writer thread.

    The caller pays the level check and one enqueue; the record is made,
    formatted and handled (console, ``log.txt``, any other handler) on the
    writer thread, with the time of this call as its time. Lines keep their
    order with each other and with records logged the ordinary way. Without
    a writer (another rank), and while the console has a ``writer`` (a
    progress bar is open: tqdm cannot draw and close bars on one thread while
    another writes around them), it is ``logger.log(level, msg)`` on the
    calling thread, after the queued lines.

    Example::

        >>> import tempfile, pathlib
        >>> work_dir = pathlib.Path(tempfile.mkdtemp())
        >>> logger = make_logger(work_dir, main_process=True, console=False)
        >>> log_queued(logger, logging.INFO, "queued")
        >>> logger.info("direct")  # waits for "queued" first
        >>> [line.split(" - ")[-1] for line in (work_dir / "log.txt").read_text().splitlines()]
        ['queued', 'direct']
        >>> close_logger(logger)
    """
    if not logger.isEnabledFor(level):
        return
    writer = line_writer(logger)
    if writer is None:
        logger.log(level, msg if isinstance(msg, str) else msg())
    else:
        writer.submit(_handle, logger, level, msg, time.time())


def line_writer(logger: logging.Logger) -> LogWriter | None:
    """The writer that takes :func:`log_queued`'s lines now: None on other ranks and while
    a progress bar owns the console (lines are then written on the calling thread)."""
    writer = writer_of(logger)
    if writer is None:
        return None
    console = console_of(logger)
    return None if console is not None and console.writer is not None else writer


def run_with_lines(logger: logging.Logger, fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)`` on ``logger``'s writer thread, in order with its queued lines, or at
    once on this thread where :func:`line_writer` is None. A logging hook hands a log
    step's work (averaging, the line, a record) over in one call this way.

    Example::

        >>> logger = make_logger(None, main_process=True, console=False)
        >>> done = []
        >>> run_with_lines(logger, done.append, "averaged")
        >>> flush_logger(logger); done
        ['averaged']
        >>> close_logger(logger)
    """
    writer = line_writer(logger)
    if writer is None:
        fn(*args)
    else:
        writer.submit(fn, *args)


def log_at(logger: logging.Logger, level: int, text: str, created: float) -> None:
    """Log ``text`` at ``level`` as a record made at ``created`` (``time.time()`` when the
    caller queued the work that logs it), after the lines queued before it.

    Example::

        >>> import time
        >>> logger = make_logger(None, main_process=True, console=False)
        >>> log_at(logger, logging.INFO, "made earlier", time.time())
        >>> close_logger(logger)
    """
    _handle(logger, level, text, created)


def _handle(logger: logging.Logger, level: int, msg: str | Callable[[], str],
            created: float) -> None:
    text = msg if isinstance(msg, str) else msg()
    record = logger.makeRecord(logger.name, level, "(queued)", 0, text, (), None)
    record.created, record.msecs = created, int((created - int(created)) * 1000) + 0.0
    logger.handle(record)


def flush_logger(logger: logging.Logger) -> None:
    """Wait until every line queued with :func:`log_queued` (and every call handed to the
    logger's writer) is written; raise the first failure of such a call."""
    writer = writer_of(logger)
    if writer is not None:
        writer.drain()


def set_current_logger(logger: logging.Logger) -> None:
    """Record ``logger`` as the one of the Runner that runs now (a Runner does it)."""
    _CURRENT[0] = logger


def current_logger() -> logging.Logger | None:
    """The logger of the Runner that ran last (MMEngine's ``MMLogger.get_current_instance``),
    or None before any run."""
    return _CURRENT[0]


def close_logger(logger: logging.Logger) -> None:
    """Write what is queued, stop the writer thread, then close and detach every handler of
    ``logger`` (files are released)."""
    writer = writer_of(logger)
    if writer is not None:
        try:
            writer.close()
        except Exception:  # a failed queued call: the handlers are released all the same
            logger.exception("a queued log write failed")
    for handler in list(logger.handlers):
        handler.close()
        logger.removeHandler(handler)
