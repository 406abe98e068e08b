"""What every loop is: a ``run()`` over a dataloader, driven by a Runner.

Example::

    >>> from hookline.engine.base_loop import BaseLoop
    >>> BaseLoop.__abstractmethods__
    frozenset({'run'})
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner

__all__ = ["BaseLoop", "note_where"]


def note_where(exc: BaseException, message: str) -> None:
    """Add where the error happened to ``exc`` (shown under its traceback)."""
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(message)


class BaseLoop(abc.ABC):
    """A loop over ``dataloader`` driven by ``runner`` (``run()`` does the work)."""

    def __init__(self, runner: Runner, dataloader: Any) -> None:
        self.runner = runner
        #: assignable: a train loop reads it at the start of every epoch
        self.dataloader = dataloader

    @abc.abstractmethod
    def run(self) -> Any:
        """Run the loop; what it returns is the loop's result (the model, the metrics)."""
