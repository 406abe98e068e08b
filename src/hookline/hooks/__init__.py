"""hookline.hooks: the built-in Runner hooks, each registered in ``hookline.HOOKS``.

Example::

    >>> from hookline import HOOKS
    >>> HOOKS.build({"type": "CheckpointHook", "interval": 2}).interval
    2
"""

from hookline.core.dependencies import raise_missing as _raise_missing

try:  # first: without PyTorch, one error saying what to install
    import torch as _torch  # noqa: F401
except ModuleNotFoundError as _exc:
    _raise_missing(_exc, "hookline.hooks")

from .activation_stats import ActivationStatsHook
from .checkpoint import CheckpointHook
from .checkpoint_loader import CheckpointLoaderHook
from .closure import ClosureHook
from .early_stopping import EarlyStoppingHook
from .ema import EMAHook
from .evaluation import DistEvalHook, EvalHook
from .inspect_hooks import GradientMonitorHook
from .invalid_loss import CheckInvalidLossHook, InvalidLossError
from .iter_timer import IterTimerHook
from .keras import KerasCallback
from .logger import LoggerHook, TextLoggerHook
from .lr_updater import ExponentialWarmupLR, LrUpdaterHook, PolyLR
from .memory import EmptyCacheHook
from .optimizer import Fp16OptimizerHook, GradientCumulativeOptimizerHook, OptimizerHook
from .param_scheduler import MomentumUpdaterHook, ParamSchedulerHook
from .profiler import ProfilerHook
from .progress import ProgressBarHook
from .sampler_seed import DistSamplerSeedHook
from .sync_buffers import SyncBuffersHook
from .tensorboard import TensorboardLoggerHook

__all__ = [
    "ActivationStatsHook",
    "CheckInvalidLossHook",
    "CheckpointHook",
    "CheckpointLoaderHook",
    "ClosureHook",
    "DistEvalHook",
    "DistSamplerSeedHook",
    "EMAHook",
    "EarlyStoppingHook",
    "EmptyCacheHook",
    "EvalHook",
    "ExponentialWarmupLR",
    "Fp16OptimizerHook",
    "GradientCumulativeOptimizerHook",
    "GradientMonitorHook",
    "InvalidLossError",
    "IterTimerHook",
    "KerasCallback",
    "LoggerHook",
    "LrUpdaterHook",
    "MomentumUpdaterHook",
    "OptimizerHook",
    "ParamSchedulerHook",
    "PolyLR",
    "ProfilerHook",
    "ProgressBarHook",
    "SyncBuffersHook",
    "TensorboardLoggerHook",
    "TextLoggerHook",
]
