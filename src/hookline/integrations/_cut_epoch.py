"""The validation of an epoch that ``stop_training`` cut short, run once for all the bridges of a run.

Keras's ``fit`` and Lightning's ``Trainer.fit`` both validate the epoch a stop
cuts short (when a validation was due after it) before they end it: Keras
reports it in ``on_epoch_end`` and then calls ``on_train_end``; Lightning
calls ``on_validation_*`` with ``current_epoch`` still that epoch, then
``on_train_epoch_end``, then ``on_train_end``. In a hookline run the Keras log
book (:class:`~.keras_logs.KerasLogBook`) and the Lightning trainer facade
(:class:`~.lightning_trainer.LightningTrainer`) each want that validation;
whichever reaches ``after_train`` first runs it through
:func:`validate_cut_epoch`, inside the ``cut_epoch_validation(runner)``
context of every hook of the run that has one, so both see it as theirs (the
Keras logs get its ``val_*`` keys, Lightning's ``current_epoch`` reads the cut
epoch and its ``on_train_epoch_end`` follows the validation), and the other
one finds it done (``val_loop.ran_at_iter``).

Example::

    >>> import contextlib
    >>> from hookline.engine.hook import Hook
    >>> class Watch(Hook):
    ...     @contextlib.contextmanager
    ...     def cut_epoch_validation(self, runner):
    ...         yield
    >>> participants([Watch(), Hook()])
    1
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["participants", "validate_cut_epoch"]

#: the context manager method a hook implements to take part (looked up on its class)
METHOD = "cut_epoch_validation"


def _contexts(hooks: Iterable[Any]) -> list[Any]:
    return [hook for hook in hooks if callable(getattr(type(hook), METHOD, None))]


def participants(hooks: Iterable[Any]) -> int:
    """How many of ``hooks`` take part in a cut epoch's validation."""
    return len(_contexts(hooks))


def validate_cut_epoch(runner: Runner) -> None:
    """Run ``runner.val_loop`` as the validation of the epoch ``stop_training`` cut short,
    inside every participating hook's ``cut_epoch_validation(runner)`` (entered in the hook
    table's order, before the epoch is counted); in an epoch-based run the epoch counts as
    done while it runs, so it is logged and checkpointed as that epoch's validation."""
    val_loop = runner.val_loop
    if val_loop is None:
        return
    with contextlib.ExitStack() as stack:
        for hook in _contexts(runner.hooks.hooks):
            stack.enter_context(getattr(hook, METHOD)(runner))
        if runner.by_epoch:
            stack.enter_context(runner.state.counting_current("epoch"))
        val_loop.run()
