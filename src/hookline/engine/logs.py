"""The Runner's standard ``logging.Logger``: console and ``work_dir/log.txt``.

Each Runner gets its own logger (no global singleton); only the main
process writes to the console and the file.

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
from pathlib import Path

_COUNTER = itertools.count()
_CURRENT: list[logging.Logger | None] = [None]
FORMAT = "%(asctime)s - hookline - %(levelname)s - %(message)s"


def make_logger(work_dir: Path | None, *, main_process: bool, console: bool = True,
                level: int = logging.INFO) -> logging.Logger:
    """A fresh logger named ``hookline.runner.N`` writing to stdout and ``log.txt``."""
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
        stream = logging.StreamHandler(sys.stdout)
        stream.setFormatter(formatter)
        logger.addHandler(stream)
    return logger


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
