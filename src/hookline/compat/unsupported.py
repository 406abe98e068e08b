"""What the compat layers do not port, and what to use instead: one clear error for each.

A name here that ported code imports (``from mmengine.hooks import
NaiveVisualizationHook``) is an ``ImportError``, a type a config builds
(``{"type": "mmengine.OneCycleParamScheduler"}``) a ``ConfigError``, and a
module (``mmengine.structures``) fails to import; every message names the
hookline way, or says why there is none (docs/porting.md, "Not supported").

Example::

    >>> from hookline.compat.unsupported import refusal
    >>> build = refusal("PrepareTTAHook", MMENGINE_HOOKS["PrepareTTAHook"])
    >>> try:
    ...     build(tta_cfg={})
    ... except Exception as exc:
    ...     print(type(exc).__name__, exc)  # doctest: +ELLIPSIS
    ConfigError MMEngine's PrepareTTAHook is not supported by hookline: it is task code ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from hookline.core import ConfigError

_PROFILER = "use hookline's ProfilerHook (hookline.hooks.ProfilerHook; docs/logging.md)"
_TASK = "it is task code (the project's own visualizer or test-time augmentation), not hook API"
_ONE_CYCLE = ("use torch's OneCycleLR in param_scheduler ({'type': 'OneCycleLR', 'max_lr': "
              "<MMEngine's eta_max>, 'cycle_momentum': False, ...}: MMEngine's OneCycleLR "
              "leaves momentum alone, torch's cycles it unless cycle_momentum is False)")
_RESTART = ("use torch's CosineAnnealingWarmRestarts in param_scheduler "
            "({'type': 'CosineAnnealingWarmRestarts', ...})")
_PLATEAU = ("use torch's ReduceLROnPlateau in param_scheduler with the metric to watch "
            "({'type': 'ReduceLROnPlateau', 'monitor': 'loss', ...}: a validation metric's "
            "name as validation reports it, without 'val/'; docs/optim_and_checkpoints.md)")

#: MMEngine hooks hookline does not port -> what to use instead
MMENGINE_HOOKS: dict[str, str] = {
    "ProfilerHook": _PROFILER, "NPUProfilerHook": _PROFILER,
    "NaiveVisualizationHook": _TASK, "PrepareTTAHook": _TASK,
}

#: MMEngine parameter schedulers hookline does not port -> what to use instead
MMENGINE_SCHEDULERS: dict[str, str] = {
    "OneCycleParamScheduler": _ONE_CYCLE, "OneCycleLR": _ONE_CYCLE,
    "CosineRestartParamScheduler": _RESTART, "CosineRestartLR": _RESTART,
    "CosineRestartMomentum": _RESTART,
    "ReduceOnPlateauParamScheduler": _PLATEAU, "ReduceOnPlateauLR": _PLATEAU,
    "ReduceOnPlateauMomentum": _PLATEAU,
}

#: MMEngine optimizer wrappers hookline does not port -> what to use instead
MMENGINE_OPTIM: dict[str, str] = {
    "ApexOptimWrapper": "use AmpOptimWrapper (torch.amp mixed precision; NVIDIA apex is not used)",
    "ZeroRedundancyOptimizer": "hookline's DistributedDataParallel training keeps the whole "
                               "optimizer state on each process; use a plain torch optimizer",
    "BaseOptimWrapper": "subclass OptimWrapper (hookline's; backward, step and zero_grad are "
                        "its methods to override)",
    "DeepSpeedOptimWrapper": "hookline has no DeepSpeed strategy; use OptimWrapper or "
                             "AmpOptimWrapper",
}

_TORCHVISION = ("hookline loads local checkpoint files only: download the weights (torchvision's "
                "own weights API) and give the file to load_checkpoint")

#: MMEngine runner names hookline does not port -> what to use instead
MMENGINE_RUNNER: dict[str, str] = {
    "FlexibleRunner": "use Runner (hookline's; its own arguments, docs/engine.md)",
    "LogProcessor": "hookline's LoggerHook writes the log lines (default_hooks={'logger': "
                    "{'type': 'LoggerHook', 'interval': ...}}); runner.log_processor has "
                    "LogProcessor's attributes",
    "CheckpointLoader": "use load_checkpoint(model, filename) (local files; no URL schemes)",
    "turn_on_activation_checkpointing": "wrap the submodules with torch.utils.checkpoint in "
                                        "the model's own forward",
    "get_torchvision_models": _TORCHVISION, "get_external_models": _TORCHVISION,
    "get_mmcls_models": _TORCHVISION, "get_deprecated_model_names": _TORCHVISION,
}

#: modules of MMEngine and mmcv that are not hook API -> why, and what to do
MODULES: dict[str, str] = {
    "mmengine.structures": "data structures (InstanceData, ...) belong to the task's code",
    "mmengine.fileio": "hookline reads and writes local files only (pathlib, torch.save)",
    "mmengine.dataset": "use torch.utils.data datasets (train_dataloader= takes a DataLoader or "
                        "a config dict); for MMEngine's samplers give the config "
                        "sampler={'type': 'InfiniteSampler'} (or 'DefaultSampler'), or import "
                        "InfiniteSampler from hookline.engine.data",
    "mmengine.evaluator": "metrics are the Runner's metrics= (callables or torchmetrics; "
                          "docs/engine.md)",
    "mmcv.ops": "operators are not hook API (a hook that needs them needs mmcv itself)",
    "mmcv.cnn": "layers and weight initialisers are not hook API (use torch.nn)",
}


def refusal(name: str, hint: str, library: str = "MMEngine") -> Callable[..., NoReturn]:
    """A stand-in for the registry under ``name``: building it raises one :class:`ConfigError`
    naming ``hint``."""
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise ConfigError(f"{library}'s {name} is not supported by hookline: {hint}")

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


def module_getattr(module: str, names: Mapping[str, str], library: str = "MMEngine"
                   ) -> Callable[[str], Any]:
    """A module ``__getattr__`` that turns ``from module import NAME`` of an unported ``NAME``
    into an ``ImportError`` naming the hookline way (an ``AttributeError`` otherwise)."""
    def __getattr__(name: str) -> Any:
        if name in names:
            raise ImportError(f"{library}'s {name} is not supported by hookline: {names[name]}",
                              name=module)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def refuse_module(module: str) -> NoReturn:
    """Raise the ``ImportError`` of an unported module (called by its stand-in file)."""
    raise ImportError(f"{module} is not supported by hookline: {MODULES[module]} "
                      "(docs/porting.md, 'Not supported')", name=module)
