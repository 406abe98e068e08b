"""``mmcv.runner.hooks``: mmcv 1.x's ``Hook``, ``HOOKS`` and hook classes.

mmcv-style hooks here (``Hook``, ``EMAHook``, ``ClosureHook``,
``OptimizerHook``, ``GradientCumulativeOptimizerHook``, ``IterTimerHook``,
``LoggerHook``) run with mmcv's
semantics; the others are hookline's hooks under mmcv's names and
arguments. All are built-ins of the mmcv-scope ``HOOKS`` registry.

Example::

    >>> from hookline.compat.mmcv.runner.hooks import HOOKS, EMAHook
    >>> type(HOOKS.build(dict(type="EMAHook", momentum=0.001))) is EMAHook
    True
"""

from hookline.hooks import (
    DistSamplerSeedHook,
    EmptyCacheHook,
    LrUpdaterHook,
    MomentumUpdaterHook,
)
from hookline.hooks.lr_updater_mmcv import MmcvLrSchedule
from hookline.hooks.param_scheduler import MMCV_MOMENTUM_HOOKS, MMCV_POLICY_HOOKS

from .adapters import CheckpointHook, DistEvalHook, EvalHook, SyncBuffersHook
from .closure import ClosureHook
from .ema import EMAHook
from .hook import HOOKS, Hook, MmcvCall
from .iter_timer import IterTimerHook
from .logger import LoggerHook, TextLoggerHook
from .optimizer import Fp16OptimizerHook, GradientCumulativeOptimizerHook, OptimizerHook

MmcvLrSchedule.stage_wrapper = MmcvCall  # LrUpdaterHook policies (get_lr) get the mmcv view
HOOKS.add_builtins({cls.__name__: cls for cls in (
    CheckpointHook, ClosureHook, DistEvalHook, DistSamplerSeedHook, EMAHook, EmptyCacheHook,
    EvalHook, Fp16OptimizerHook, GradientCumulativeOptimizerHook, IterTimerHook, LrUpdaterHook,
    MomentumUpdaterHook, OptimizerHook, SyncBuffersHook, TextLoggerHook)})
HOOKS.add_builtins(MMCV_POLICY_HOOKS)
HOOKS.add_builtins(MMCV_MOMENTUM_HOOKS)

__all__ = [
    "HOOKS", "CheckpointHook", "ClosureHook", "DistEvalHook", "DistSamplerSeedHook", "EMAHook",
    "EmptyCacheHook", "EvalHook", "Fp16OptimizerHook", "GradientCumulativeOptimizerHook", "Hook",
    "IterTimerHook", "LoggerHook", "LrUpdaterHook", "MomentumUpdaterHook", "OptimizerHook",
    "SyncBuffersHook", "TextLoggerHook",
]
