"""What every loop is: a ``run()`` over a dataloader, driven by a Runner.

Example::

    >>> from hookline.engine.base_loop import BaseLoop
    >>> BaseLoop.__abstractmethods__
    frozenset({'run'})
"""

from __future__ import annotations

import abc
import contextlib
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from torch.utils.data import DataLoader

from hookline.core import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner

__all__ = ["BaseLoop", "check_assigned_loader", "holding_runner", "note_where"]


def note_where(exc: BaseException, message: str) -> None:
    """Add where the error happened to ``exc`` (shown under its traceback)."""
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(message)


def check_assigned_loader(loader: Any, where: str) -> None:
    """A loader assigned to a loop must be a torch ``DataLoader`` (what the Runner builds
    its ``*_dataloader`` arguments into): one ConfigError naming what is accepted.

    Example::

        >>> check_assigned_loader([1, 2, 3], "EpochBasedTrainLoop.dataloader")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: EpochBasedTrainLoop.dataloader must be a torch ...
    """
    if isinstance(loader, DataLoader):
        return
    if isinstance(loader, Mapping):
        hint = ": build one from this config with runner.build_dataloader(config)"
    elif isinstance(loader, (list, tuple)):
        hint = "; for batches already made, assign DataLoader(batches, batch_size=None)"
    else:
        hint = ""
    raise ConfigError(f"{where} must be a torch DataLoader (as built from the Runner's "
                      f"dataloader arguments, or by runner.build_dataloader(...)), got "
                      f"{ConfigError.brief(loader)}{hint}")


class BaseLoop(abc.ABC):
    """A loop over ``dataloader`` driven by ``runner`` (``run()`` does the work).

    The loop refers to its Runner weakly (the Runner owns its loops: no reference
    cycle, so ``del runner`` frees it at once); while the Runner runs, it holds the
    loop's ``runner`` as a plain attribute (:func:`holding_runner`), so reading it
    costs nothing more in the loop's iterations. (A subclass that assigns
    ``self.runner`` itself keeps it strongly, as before.)
    """

    runner: Runner  # a plain attribute while the Runner runs; else from the weak reference

    def __init__(self, runner: Runner, dataloader: Any) -> None:
        self._runner_ref = weakref.ref(runner)
        self._dataloader = dataloader

    @property
    def dataloader(self) -> Any:
        """The loop's DataLoader. Assignable (a hook switching loaders, as in MMEngine): a
        train loop reads it at the start of every epoch; anything but a torch ``DataLoader``
        is refused (a ``ConfigError``) as the Runner's own arguments are."""
        return self._dataloader

    @dataloader.setter
    def dataloader(self, loader: Any) -> None:
        check_assigned_loader(loader, f"{type(self).__name__}.dataloader")
        self._dataloader = loader

    def __getattr__(self, name: str) -> Any:
        """``runner`` outside a run: the Runner the weak reference points to."""
        if name != "runner":
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        ref = self.__dict__.get("_runner_ref")
        runner = ref() if ref is not None else None
        if runner is None:
            raise ReferenceError(f"the Runner of this {type(self).__name__} was deleted")
        return runner

    @abc.abstractmethod
    def run(self) -> Any:
        """Run the loop; what it returns is the loop's result (the model, the metrics)."""


@contextlib.contextmanager
def holding_runner(runner: Runner, loops: Sequence[BaseLoop | None]) -> Iterator[None]:
    """Inside: each of ``loops`` holds ``runner`` as a plain attribute (a run reads it every
    iteration); after: the weak reference again (no reference cycle left behind).

    Example::

        >>> class Loop(BaseLoop):
        ...     def run(self): return self.runner
        >>> class Runner: pass
        >>> runner = Runner(); loop = Loop(runner, [])
        >>> with holding_runner(runner, [loop]):
        ...     "runner" in vars(loop)
        True
        >>> "runner" in vars(loop), loop.run() is runner
        (False, True)
    """
    held = [loop for loop in loops if loop is not None and "runner" not in vars(loop)]
    for loop in held:
        vars(loop)["runner"] = runner
    try:
        yield
    finally:
        for loop in held:
            vars(loop).pop("runner", None)
