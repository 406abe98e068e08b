"""hookline.engine: the training Runner, its hooks' base class, checkpoints, config.

Example::

    >>> from hookline.engine import Runner, Hook, HOOKS
    >>> "CheckpointHook" in HOOKS
    True
"""

import hookline.hooks  # noqa: E402,F401,I001  (registers the built-in hooks in HOOKS)

from .checkpoint import CheckpointError
from .hook import STAGES, Hook
from .message_hub import MessageHub
from .registries import DATASETS, HOOKS, LOSSES, MODELS, OPTIMIZERS, PARAM_SCHEDULERS
from .runner import Runner
from .signals import TrainingInterrupted

__all__ = [
    "CheckpointError",
    "DATASETS",
    "HOOKS",
    "LOSSES",
    "Hook",
    "MODELS",
    "MessageHub",
    "OPTIMIZERS",
    "PARAM_SCHEDULERS",
    "Runner",
    "STAGES",
    "TrainingInterrupted",
]
