"""``mmengine.runner``: ``Runner`` (hookline's), the loops, priorities and checkpoint helpers.

Hooks import ``Runner`` for type hints and ``isinstance`` checks on the loops
(``isinstance(runner.train_loop, EpochBasedTrainLoop)``); both name
hookline's classes. hookline's Runner takes its own arguments (docs/engine.md),
not MMEngine's ``Runner(cfg)`` ones.

Example::

    >>> from hookline.compat.mmengine.runner import EpochBasedTrainLoop, Runner, get_priority
    >>> import hookline
    >>> Runner is hookline.Runner, get_priority("LOW"), get_priority(30)
    (True, 70, 30)
"""

from __future__ import annotations

from typing import Any

from hookline.core import Priority
from hookline.engine.loops import (
    BaseLoop,
    EpochBasedTrainLoop,
    IterBasedTrainLoop,
    TestLoop,
    ValLoop,
)
from hookline.engine.runner import Runner

from .checkpoint import (
    get_state_dict,
    load_checkpoint,
    load_state_dict,
    save_checkpoint,
    weights_to_cpu,
)


def get_priority(priority: Any) -> int:
    """A priority name, ``Priority`` member or int 0..100 as its int value."""
    return int(Priority.get(priority))


__all__ = [
    "BaseLoop", "EpochBasedTrainLoop", "IterBasedTrainLoop", "Priority", "Runner", "TestLoop",
    "ValLoop", "get_priority", "get_state_dict", "load_checkpoint", "load_state_dict",
    "save_checkpoint", "weights_to_cpu",
]
