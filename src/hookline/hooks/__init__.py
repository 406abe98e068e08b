"""hookline.hooks: the built-in Runner hooks, each registered in ``hookline.HOOKS``.

Example::

    >>> from hookline import HOOKS
    >>> HOOKS.build({"type": "CheckpointHook", "interval": 2}).interval
    2
"""

from .checkpoint import CheckpointHook
from .iter_timer import IterTimerHook
from .logger import LoggerHook, TextLoggerHook
from .optimizer import OptimizerHook
from .param_scheduler import ParamSchedulerHook
from .profiler import ProfilerHook
from .progress import ProgressBarHook
from .sampler_seed import DistSamplerSeedHook
from .tensorboard import TensorboardLoggerHook

__all__ = [
    "CheckpointHook",
    "DistSamplerSeedHook",
    "IterTimerHook",
    "LoggerHook",
    "OptimizerHook",
    "ParamSchedulerHook",
    "ProfilerHook",
    "ProgressBarHook",
    "TensorboardLoggerHook",
    "TextLoggerHook",
]
