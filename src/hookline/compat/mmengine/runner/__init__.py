"""``mmengine.runner``: ``Runner`` (hookline's), the loops, priorities, ``autocast``,
``set_random_seed`` and checkpoint helpers.

Hooks import ``Runner`` for type hints and ``isinstance`` checks on the loops
(``isinstance(runner.train_loop, EpochBasedTrainLoop)``); both name
hookline's classes. hookline's Runner takes its own arguments (docs/engine.md),
not MMEngine's ``Runner(cfg)`` ones. The submodules follow MMEngine's:
:mod:`.loops`, :mod:`.base_loop`, :mod:`.amp`, :mod:`.utils`, :mod:`.priority`,
:mod:`.checkpoint`.

Example::

    >>> from hookline.compat.mmengine.runner import EpochBasedTrainLoop, Runner, get_priority
    >>> import hookline
    >>> Runner is hookline.Runner, get_priority("LOW"), get_priority(30)
    (True, 70, 30)
"""

from __future__ import annotations

from hookline.engine.runner import Runner

from ...unsupported import MMENGINE_RUNNER, module_getattr
from .amp import autocast
from .base_loop import BaseLoop
from .checkpoint import (
    find_latest_checkpoint,
    get_state_dict,
    load_checkpoint,
    load_state_dict,
    save_checkpoint,
    weights_to_cpu,
)
from .loops import EpochBasedTrainLoop, IterBasedTrainLoop, TestLoop, ValLoop
from .priority import Priority, get_priority
from .utils import set_random_seed

__getattr__ = module_getattr(__name__, MMENGINE_RUNNER)

__all__ = [
    "BaseLoop", "EpochBasedTrainLoop", "IterBasedTrainLoop", "Priority", "Runner", "TestLoop",
    "ValLoop", "autocast", "find_latest_checkpoint", "get_priority", "get_state_dict",
    "load_checkpoint", "load_state_dict", "save_checkpoint", "set_random_seed",
    "weights_to_cpu",
]
