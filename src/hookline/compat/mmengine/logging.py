"""``mmengine.logging``: ``print_log``, ``MMLogger``, ``MessageHub`` and ``HistoryBuffer``.

``MMLogger.get_current_instance()`` is the logger made last: the one of the
Runner that ran last (each hookline Runner has its own ``logging.Logger``) or
one ``MMLogger.get_instance(name, log_file=...)`` made;
``MessageHub.get_current_instance()`` is that Runner's message hub.

Example::

    >>> import logging
    >>> from hookline.compat.mmengine.logging import MessageHub, print_log
    >>> print_log("printed when no logger is given")
    printed when no logger is given
    >>> print_log("dropped", logger="silent")
    >>> hub = MessageHub.get_instance("example")
    >>> hub.update_scalar("train/loss", 0.5)
    >>> MessageHub.get_current_instance().get_scalar("train/loss").current()
    0.5
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, ClassVar

from hookline.core import ConfigError
from hookline.engine.history_buffer import HistoryBuffer
from hookline.engine.logs import current_logger, set_current_logger
from hookline.engine.message_hub import MessageHub as _MessageHub

#: MMEngine's log line format (``11/27 20:32:14 - mylog - INFO - message``)
_FORMAT = logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s",
                            datefmt="%m/%d %H:%M:%S")
#: the name of the logger ``print_log(logger="current")`` uses before any Runner or instance
FALLBACK_NAME = "mmengine"


class MMLogger(logging.Logger):
    """MMEngine's logger class; its class methods give the loggers hookline Runners use.

    ``get_instance(name, log_file=None, log_level="INFO", file_mode="w")`` makes a
    logger (``instance_name`` = ``name``) that prints to the console and, with
    ``log_file``, writes there too; the latest one made becomes the current
    instance until a Runner runs (its logger is current while it runs).
    """

    @classmethod
    def get_current_instance(cls) -> logging.Logger:
        """The logger made last: by a Runner (it makes it current again when it runs) or by
        :meth:`get_instance`; ``"mmengine"`` (INFO to the console) before any."""
        logger = current_logger()
        return logger if logger is not None else cls.get_instance(FALLBACK_NAME)

    @classmethod
    def get_instance(cls, name: str, log_file: str | Path | None = None,
                     log_level: int | str = "INFO", file_mode: str = "w",
                     **kwargs: Any) -> logging.Logger:
        """The ``logging`` logger called ``name``; made the first time (at ``log_level``, a
        console handler, a file handler for ``log_file``) and then the current instance."""
        logger = logging.getLogger(name)
        if getattr(logger, "instance_name", None) == name:
            return logger
        logger.setLevel(_level(log_level))
        if not logger.handlers:
            console = logging.StreamHandler(sys.stdout)
            console.setFormatter(_FORMAT)
            logger.addHandler(console)
        if log_file is not None:
            _add_file_handler(logger, Path(log_file), file_mode)
        logger.instance_name = name  # type: ignore[attr-defined]
        set_current_logger(logger)
        return logger

    @classmethod
    def check_instance_created(cls, name: str) -> bool:
        return name in logging.Logger.manager.loggerDict


def _level(log_level: int | str) -> int:
    """``log_level`` ("INFO", 20 ...) as a number; a ConfigError naming the accepted ones."""
    if isinstance(log_level, int) and not isinstance(log_level, bool):
        return log_level
    names = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET")
    if isinstance(log_level, str) and log_level.upper() in names:
        return int(logging.getLevelName(log_level.upper()))
    raise ConfigError(f"MMLogger log_level must be one of {', '.join(names)} or an int, "
                      f"got {log_level!r}")


def _add_file_handler(logger: logging.Logger, path: Path, file_mode: str) -> None:
    """Log to ``path`` too (once per file), in MMEngine's format."""
    if file_mode not in ("w", "a"):
        raise ConfigError(f"MMLogger file_mode must be 'w' or 'a', got {file_mode!r}")
    target = str(path.resolve())
    if any(getattr(h, "baseFilename", None) == target for h in logger.handlers):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(target, mode=file_mode, encoding="utf-8")
    handler.setFormatter(_FORMAT)
    logger.addHandler(handler)


def print_log(msg: Any, logger: logging.Logger | str | None = None,
              level: int = logging.INFO) -> None:
    """Log ``msg``: ``logger=None`` prints it, ``"silent"`` drops it, ``"current"`` uses the
    current Runner's logger, a name or a ``logging.Logger`` logs there."""
    if logger is None:
        print(msg)
    elif isinstance(logger, logging.Logger):
        logger.log(level, msg)
    elif logger == "silent":
        return
    elif logger == "current":
        MMLogger.get_current_instance().log(level, msg)
    elif isinstance(logger, str):
        logging.getLogger(logger).log(level, msg)
    else:
        raise TypeError(f"logger should be a logging.Logger, 'silent', 'current', a logger name "
                        f"or None, got {type(logger).__name__}")


class MessageHub(_MessageHub):
    """hookline's :class:`~hookline.engine.MessageHub` with MMEngine's ``get_instance``."""

    _named: ClassVar[dict[str, _MessageHub]] = {}

    @classmethod
    def get_instance(cls, name: str = "mmengine", **kwargs: Any) -> _MessageHub:
        """The hub called ``name`` (made if new); it becomes the current one."""
        hub = cls._named.get(name)
        if hub is None:
            hub = cls._named[name] = cls(**{k: v for k, v in kwargs.items() if k == "window"})
        hub.make_current()
        return hub


__all__ = ["HistoryBuffer", "MMLogger", "MessageHub", "print_log"]
