"""``mmcv.runner``: mmcv 1.x's hook API over a hookline Runner.

``Hook``, ``HOOKS``, the hook classes, ``master_only``, ``get_dist_info``,
``allreduce_params``, ``Priority`` / ``get_priority``, ``LogBuffer``,
``load_checkpoint`` / ``load_state_dict`` / ``save_checkpoint`` and, for
``isinstance`` checks, ``BaseRunner`` / ``EpochBasedRunner`` /
``IterBasedRunner``. mmcv's runners themselves are not here: a hookline
``Runner`` runs the hooks.

Example::

    >>> from hookline.compat.mmcv.runner import HOOKS, Hook, get_priority
    >>> @HOOKS.register_module()
    ... class SeedStyle(Hook):
    ...     def after_train_iter(self, runner):
    ...         if self.every_n_iters(runner, 2):
    ...             runner.logger.info("loss %.3f", runner.outputs["loss"])
    >>> get_priority("VERY_LOW"), SeedStyle().get_triggered_stages()
    (90, ['after_train_iter'])
"""

from hookline.core import Priority

from ...mmengine.runner import get_priority
from ...mmengine.runner.checkpoint import (
    get_state_dict,
    load_checkpoint,
    load_state_dict,
    save_checkpoint,
    weights_to_cpu,
)
from .dist_utils import allreduce_grads, allreduce_params, get_dist_info, master_only
from .hooks import (
    HOOKS,
    CheckpointHook,
    ClosureHook,
    DistEvalHook,
    DistSamplerSeedHook,
    EMAHook,
    EmptyCacheHook,
    EvalHook,
    Fp16OptimizerHook,
    GradientCumulativeOptimizerHook,
    Hook,
    IterTimerHook,
    LoggerHook,
    LrUpdaterHook,
    MomentumUpdaterHook,
    OptimizerHook,
    SyncBuffersHook,
    TextLoggerHook,
)
from .log_buffer import LogBuffer
from .runner_view import BaseRunner, EpochBasedRunner, IterBasedRunner

__all__ = [
    "HOOKS", "BaseRunner", "CheckpointHook", "ClosureHook", "DistEvalHook", "DistSamplerSeedHook",
    "EMAHook", "EmptyCacheHook", "EpochBasedRunner", "EvalHook", "Fp16OptimizerHook",
    "GradientCumulativeOptimizerHook", "Hook", "IterBasedRunner", "IterTimerHook", "LogBuffer",
    "LoggerHook", "LrUpdaterHook", "MomentumUpdaterHook", "OptimizerHook", "Priority",
    "SyncBuffersHook", "TextLoggerHook", "allreduce_grads", "allreduce_params", "get_dist_info",
    "get_priority", "get_state_dict", "load_checkpoint", "load_state_dict", "master_only",
    "save_checkpoint", "weights_to_cpu",
]
