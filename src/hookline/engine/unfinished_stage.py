"""The hooks of a stage a failure left out, run when ``train()`` is called again.

A hook that raises in ``after_train_iter`` stops the run there, and the hooks after
it in the stage's order (the logger, the parameter schedulers, the checkpoint hook
with the default priorities) do not see that iteration. Its step ran, so ``train()``
again counts the iteration as done (:meth:`~.run_state.RunState.continue_stopped_epoch`);
before it goes on, :class:`UnfinishedStage` calls those remaining hooks with the
iteration's own arguments, the run still at that iteration, so a per-iteration
scheduler does not fall one step behind and a log or checkpoint due there happens.
The hook that raised is not called again for that iteration. A validation's
``after_val_epoch`` is finished the same way (its metrics computed, the hooks after
the one that raised get them), instead of validating again.

Example::

    >>> class Hook:
    ...     def __init__(self, name): self.name = name
    ...     def after_train_iter(self, runner, **kwargs): print(self.name, kwargs["batch_idx"])
    >>> first, failing, last = Hook("first"), Hook("failing"), Hook("last")
    >>> methods = tuple(h.after_train_iter for h in (first, failing, last))
    >>> left = UnfinishedStage.after(failing, methods, (0, 3, 3), {"batch_idx": 2},
    ...                              "after_train_iter")
    >>> left.run(runner=None, position=(0, 3, 3))
    last 2
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hookline.core import HookError

__all__ = ["UnfinishedStage"]


class UnfinishedStage:
    """The hooks of a ``stage`` call after the one that raised, with the call's arguments and
    the run's position (:attr:`RunState.resume_point`) when it raised."""

    __slots__ = ("methods", "kwargs", "position", "stage")

    def __init__(self, methods: tuple[Any, ...], position: tuple[int, int, int],
                 kwargs: dict[str, Any], stage: str) -> None:
        self.methods = methods
        self.position = position
        self.kwargs = kwargs
        self.stage = stage

    @classmethod
    def after(cls, failed: Any, methods: Sequence[Any], position: tuple[int, int, int],
              kwargs: dict[str, Any], stage: str) -> UnfinishedStage | None:
        """The methods after the one of hook ``failed`` (a :class:`HookError`'s ``hook``: the
        hook object, or the function of a function hook); None when it is not among them (a
        hook that raised another hook's HookError): those hooks then skip the iteration."""
        for index, method in enumerate(methods):
            owner = getattr(method, "__self__", method)
            if owner is failed or getattr(owner, "fn", None) is failed:
                return cls(tuple(methods[index + 1:]), position, kwargs, stage)
        return None

    def run(self, runner: Any, position: tuple[int, int, int]) -> bool:
        """Call the remaining hooks if the run is still where it stopped (``position``: its
        :attr:`RunState.resume_point` now; a checkpoint loaded since then moved it), and
        say whether it was. A hook that raises here leaves the ones after it unfinished:
        :class:`HookError`, with this object keeping only those."""
        if position != self.position:
            return False
        while self.methods:
            method, self.methods = self.methods[0], self.methods[1:]
            try:
                method(runner, **self.kwargs)
            except HookError:
                raise
            except Exception as exc:
                raise HookError(getattr(method, "__self__", method), self.stage, exc) from exc
        return True
