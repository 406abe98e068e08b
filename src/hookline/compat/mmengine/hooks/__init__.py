"""``mmengine.hooks``: ``Hook`` and the built-in hooks, with MMEngine's names and arguments.

Each class here is also a built-in of the MMEngine-scope ``HOOKS`` registry
(``HOOKS.build({"type": "EMAHook", "momentum": 1e-3})``); a ported file may
register the same names again without a clash.

Example::

    >>> from hookline.compat.mmengine.hooks import EMAHook, Hook
    >>> from hookline.compat.mmengine.registry import HOOKS
    >>> type(HOOKS.build({"type": "EMAHook", "momentum": 0.001})) is EMAHook
    True
"""

from hookline.hooks import DistSamplerSeedHook, EmptyCacheHook, IterTimerHook, SyncBuffersHook

from ...unsupported import MMENGINE_HOOKS, module_getattr, refusal
from ..registry import HOOKS
from .adapters import CheckpointHook, EarlyStoppingHook, LoggerHook
from .ema_hook import EMAHook
from .hook import Hook
from .param_scheduler_hook import ParamSchedulerHook
from .runtime_info_hook import RuntimeInfoHook

HOOKS.add_builtins({cls.__name__: cls for cls in (
    CheckpointHook, DistSamplerSeedHook, EMAHook, EarlyStoppingHook, EmptyCacheHook,
    IterTimerHook, LoggerHook, ParamSchedulerHook, RuntimeInfoHook, SyncBuffersHook)})

HOOKS.add_builtins({name: refusal(name, hint) for name, hint in MMENGINE_HOOKS.items()
                   if name not in HOOKS.builtins})
__getattr__ = module_getattr(__name__, MMENGINE_HOOKS)

__all__ = [
    "CheckpointHook", "DistSamplerSeedHook", "EMAHook", "EarlyStoppingHook", "EmptyCacheHook",
    "Hook", "IterTimerHook", "LoggerHook", "ParamSchedulerHook", "RuntimeInfoHook",
    "SyncBuffersHook",
]
