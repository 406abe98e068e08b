"""``mmengine.logging``: ``print_log``, ``MMLogger``, ``MessageHub`` and ``HistoryBuffer``.

``MMLogger.get_current_instance()`` is the logger of the Runner that ran
last (each hookline Runner has its own ``logging.Logger``);
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
from typing import Any, ClassVar

from hookline.engine.history_buffer import HistoryBuffer
from hookline.engine.logs import current_logger
from hookline.engine.message_hub import MessageHub as _MessageHub


class MMLogger(logging.Logger):
    """MMEngine's logger class; its class methods give the loggers hookline Runners use."""

    @classmethod
    def get_current_instance(cls) -> logging.Logger:
        """The logger of the Runner that ran (or was made) last; ``"mmengine"`` before any."""
        logger = current_logger()
        return logger if logger is not None else cls.get_instance("mmengine")

    @classmethod
    def get_instance(cls, name: str, **kwargs: Any) -> logging.Logger:
        """The standard ``logging`` logger called ``name`` (``log_level=...`` sets its level)."""
        logger = logging.getLogger(name)
        level = kwargs.get("log_level")
        if level is not None:
            logger.setLevel(level)
        return logger

    @classmethod
    def check_instance_created(cls, name: str) -> bool:
        return name in logging.Logger.manager.loggerDict


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
