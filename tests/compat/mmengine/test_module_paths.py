"""MMEngine's submodule paths that downstream code imports exist under hookline.compat.mmengine,
name the same objects as the package paths, and refuse unported names with what to use."""

from __future__ import annotations

import importlib

import pytest

import hookline
from hookline.compat.mmengine.optim import LinearLR, OptimWrapper, build_optim_wrapper
from hookline.compat.mmengine.optim.optimizer.builder import build_optim_wrapper as built
from hookline.compat.mmengine.optim.optimizer.optimizer_wrapper import OptimWrapper as ow
from hookline.compat.mmengine.optim.scheduler.lr_scheduler import LinearLR as linear
from hookline.compat.mmengine.runner import ValLoop
from hookline.compat.mmengine.runner.loops import ValLoop as val_loop
from hookline.compat.unsupported import MMENGINE_OPTIM, MMENGINE_RUNNER, MMENGINE_SCHEDULERS
from hookline.engine import loops

PREFIX = "hookline.compat.mmengine."

#: (module, names) as downstream code imports them
PATHS = [
    ("runner.amp", ["autocast"]),
    ("runner.loops", ["EpochBasedTrainLoop", "IterBasedTrainLoop", "ValLoop", "TestLoop"]),
    ("runner.base_loop", ["BaseLoop"]),
    ("runner.priority", ["Priority", "get_priority"]),
    ("runner.utils", ["set_random_seed"]),
    ("runner.checkpoint", ["find_latest_checkpoint", "load_checkpoint"]),
    ("runner", ["autocast", "set_random_seed", "find_latest_checkpoint", "ValLoop", "Runner"]),
    ("optim.scheduler.lr_scheduler", ["LRSchedulerMixin", "ConstantLR", "CosineAnnealingLR",
                                      "ExponentialLR", "LinearLR", "MultiStepLR", "StepLR",
                                      "PolyLR"]),
    ("optim.scheduler.momentum_scheduler", ["MomentumSchedulerMixin", "ConstantMomentum",
                                            "CosineAnnealingMomentum", "ExponentialMomentum",
                                            "LinearMomentum", "MultiStepMomentum",
                                            "StepMomentum", "PolyMomentum"]),
    ("optim.scheduler.param_scheduler", ["INF", "_ParamScheduler", "ConstantParamScheduler",
                                         "CosineAnnealingParamScheduler",
                                         "ExponentialParamScheduler", "LinearParamScheduler",
                                         "MultiStepParamScheduler", "StepParamScheduler",
                                         "PolyParamScheduler"]),
    ("optim.scheduler", ["LRSchedulerMixin", "MomentumSchedulerMixin", "LinearLR", "INF"]),
    ("optim.optimizer.optimizer_wrapper", ["OptimWrapper"]),
    ("optim.optimizer.amp_optimizer_wrapper", ["AmpOptimWrapper"]),
    ("optim.optimizer.default_constructor", ["DefaultOptimWrapperConstructor"]),
    ("optim.optimizer.builder", ["build_optim_wrapper", "OPTIMIZERS",
                                 "OPTIM_WRAPPER_CONSTRUCTORS"]),
    ("optim.optimizer.optimizer_wrapper_dict", ["OptimWrapperDict"]),
    ("optim.optimizer", ["OptimWrapper", "AmpOptimWrapper", "DefaultOptimWrapperConstructor",
                         "build_optim_wrapper", "OptimWrapperDict"]),
]


@pytest.mark.parametrize(("module", "names"), PATHS, ids=[m for m, _ in PATHS])
def test_from_path_import_names(module, names):
    namespace: dict = {}
    exec(f"from {PREFIX}{module} import {', '.join(names)}", namespace)
    assert all(namespace[name] is not None for name in names)


def test_the_paths_name_the_same_objects():
    assert linear is LinearLR and ow is OptimWrapper is hookline.OptimWrapper
    assert built is build_optim_wrapper and val_loop is ValLoop is loops.ValLoop
    # the classes keep the package path that pickles and reprs name (as before the split)
    assert LinearLR.__module__ == "hookline.compat.mmengine.optim.scheduler"


@pytest.mark.parametrize(("module", "table"), [
    ("optim.scheduler.lr_scheduler", MMENGINE_SCHEDULERS),
    ("optim.scheduler.momentum_scheduler", MMENGINE_SCHEDULERS),
    ("optim.scheduler.param_scheduler", MMENGINE_SCHEDULERS),
    ("optim.optimizer", MMENGINE_OPTIM),
    ("optim.optimizer.optimizer_wrapper", MMENGINE_OPTIM),
    ("optim.optimizer.builder", MMENGINE_OPTIM),
    ("optim.optimizer.base", MMENGINE_OPTIM),
    ("optim.optimizer.apex_optimizer_wrapper", MMENGINE_OPTIM),
    ("optim.optimizer.zero_optimizer", MMENGINE_OPTIM),
    ("runner", MMENGINE_RUNNER),
])
def test_unported_names_are_an_import_error_saying_what_to_use(module, table):
    for name, hint in table.items():
        with pytest.raises(ImportError, match=rf"MMEngine's {name} is not supported by hookline: ") \
                as caught:
            exec(f"from {PREFIX}{module} import {name}", {})
        assert hint in str(caught.value)
    with pytest.raises(ImportError, match="cannot import name 'NoSuchName'"):
        exec(f"from {PREFIX}{module} import NoSuchName", {})


def test_mmengines_unported_scheduler_names_by_module():
    """As MMEngine lays them out: OneCycleLR is refused where MMEngine defines it."""
    for module, name in [("optim.scheduler.lr_scheduler", "OneCycleLR"),
                         ("optim.scheduler.momentum_scheduler", "CosineRestartMomentum"),
                         ("optim.scheduler.param_scheduler", "ReduceOnPlateauParamScheduler"),
                         ("optim.optimizer.apex_optimizer_wrapper", "ApexOptimWrapper"),
                         ("optim.optimizer.zero_optimizer", "ZeroRedundancyOptimizer")]:
        imported = importlib.import_module(PREFIX + module)
        with pytest.raises(ImportError, match=f"{name} is not supported by hookline: "):
            getattr(imported, name)
