"""hookline.engine: the training Runner, its loops, optimizer wrappers, hooks' base class, checkpoints.

The engine imports only ``hookline.core`` (plus torch): the built-in hooks of
``hookline.hooks`` are found by registry name, never imported here. Without
torch, importing it is one ``ImportError`` saying what to install.

Example::

    >>> from hookline.engine import Runner, Hook, HOOKS, LOOPS
    >>> "CheckpointHook" in HOOKS, "EpochBasedTrainLoop" in LOOPS
    (True, True)
"""

from hookline.core.dependencies import raise_missing as _raise_missing

try:  # first: without PyTorch, one error saying what to install
    import torch as _torch  # noqa: F401
except ModuleNotFoundError as _exc:
    _raise_missing(_exc, "hookline.engine")

from .amp_optim_wrapper import AmpOptimWrapper
from .checkpoint import CheckpointError
from .closure_hook import ClosureHook
from .default_hooks import DEFAULT_HOOKS
from .hook import STAGES, Hook
from .loops import BaseLoop, EpochBasedTrainLoop, IterBasedTrainLoop, TestLoop, TrainLoop, ValLoop
from .message_hub import MessageHub
from .optim_wrapper import OptimWrapper
from .optim_wrapper_dict import OptimWrapperDict
from .registries import (
    DATASETS,
    HOOKS,
    LOOPS,
    LOSSES,
    METRICS,
    MODELS,
    OPTIM_WRAPPERS,
    OPTIMIZERS,
    PARAM_SCHEDULERS,
)
from .run_state import RunState
from .runner import Runner
from .signals import TrainingInterrupted

__all__ = [
    "DATASETS",
    "DEFAULT_HOOKS",
    "HOOKS",
    "LOOPS",
    "LOSSES",
    "METRICS",
    "MODELS",
    "OPTIMIZERS",
    "OPTIM_WRAPPERS",
    "PARAM_SCHEDULERS",
    "STAGES",
    "AmpOptimWrapper",
    "BaseLoop",
    "CheckpointError",
    "ClosureHook",
    "EpochBasedTrainLoop",
    "Hook",
    "IterBasedTrainLoop",
    "MessageHub",
    "OptimWrapper",
    "OptimWrapperDict",
    "RunState",
    "Runner",
    "TestLoop",
    "TrainLoop",
    "TrainingInterrupted",
    "ValLoop",
]
