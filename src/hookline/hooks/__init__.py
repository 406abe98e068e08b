"""hookline.hooks: the built-in Runner hooks, each registered in ``hookline.HOOKS``.

Example::

    >>> from hookline import HOOKS
    >>> HOOKS.build({"type": "CheckpointHook", "interval": 2}).interval
    2
"""

from .checkpoint import CheckpointHook
from .closure import ClosureHook
from .early_stopping import EarlyStoppingHook
from .ema import EMAHook
from .invalid_loss import CheckInvalidLossHook, InvalidLossError
from .iter_timer import IterTimerHook
from .keras import KerasCallback
from .logger import LoggerHook, TextLoggerHook
from .memory import EmptyCacheHook
from .optimizer import OptimizerHook
from .param_scheduler import ParamSchedulerHook
from .profiler import ProfilerHook
from .progress import ProgressBarHook
from .sampler_seed import DistSamplerSeedHook
from .sync_buffers import SyncBuffersHook
from .tensorboard import TensorboardLoggerHook

__all__ = [
    "CheckInvalidLossHook",
    "CheckpointHook",
    "ClosureHook",
    "DistSamplerSeedHook",
    "EMAHook",
    "EarlyStoppingHook",
    "EmptyCacheHook",
    "InvalidLossError",
    "IterTimerHook",
    "KerasCallback",
    "LoggerHook",
    "OptimizerHook",
    "ParamSchedulerHook",
    "ProfilerHook",
    "ProgressBarHook",
    "SyncBuffersHook",
    "TensorboardLoggerHook",
    "TextLoggerHook",
]
