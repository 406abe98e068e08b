"""The registries configs name things through: what is in them, and the errors for names
that are not."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from hookline import ConfigError
from hookline.engine import (
    DATASETS,
    HOOKS,
    LOOPS,
    LOSSES,
    OPTIM_WRAPPERS,
    OPTIMIZERS,
    PARAM_SCHEDULERS,
    AmpOptimWrapper,
    EpochBasedTrainLoop,
    IterBasedTrainLoop,
    OptimWrapper,
    OptimWrapperDict,
    ValLoop,
)
from hookline.engine import TestLoop as EngineTestLoop  # (not a pytest class)


def test_every_torch_optimizer_is_registered_by_its_name():
    assert OPTIMIZERS.get("AdamW") is torch.optim.AdamW
    assert {"SGD", "Adam", "RMSprop", "Adagrad"} <= set(OPTIMIZERS)
    assert "Optimizer" not in OPTIMIZERS  # the base class is not an optimizer to build


def test_every_torch_scheduler_is_registered_by_its_name():
    assert PARAM_SCHEDULERS.get("CosineAnnealingLR") is torch.optim.lr_scheduler.CosineAnnealingLR
    assert {"StepLR", "OneCycleLR", "SequentialLR", "ReduceLROnPlateau"} <= set(PARAM_SCHEDULERS)
    assert "LRScheduler" not in PARAM_SCHEDULERS and "Optimizer" not in PARAM_SCHEDULERS


def test_every_torch_loss_is_registered_and_builds_with_its_arguments():
    assert LOSSES.get("CrossEntropyLoss") is torch.nn.CrossEntropyLoss
    assert {"MSELoss", "BCEWithLogitsLoss", "NLLLoss"} <= set(LOSSES)
    loss = LOSSES.build({"type": "CrossEntropyLoss", "label_smoothing": 0.1})
    assert isinstance(loss, torch.nn.CrossEntropyLoss) and loss.label_smoothing == 0.1


def test_the_four_loops_and_three_optim_wrappers_are_registered():
    assert {"EpochBasedTrainLoop", "IterBasedTrainLoop", "ValLoop", "TestLoop"} <= set(LOOPS)
    assert LOOPS.get("EpochBasedTrainLoop") is EpochBasedTrainLoop
    assert LOOPS.get("IterBasedTrainLoop") is IterBasedTrainLoop
    assert LOOPS.get("ValLoop") is ValLoop and LOOPS.get("TestLoop") is EngineTestLoop
    assert OPTIM_WRAPPERS.get("OptimWrapper") is OptimWrapper
    assert OPTIM_WRAPPERS.get("AmpOptimWrapper") is AmpOptimWrapper
    assert OPTIM_WRAPPERS.get("OptimWrapperDict") is OptimWrapperDict


def test_the_default_hooks_are_found_by_name():
    for name in ("CheckpointHook", "LoggerHook", "ParamSchedulerHook", "IterTimerHook",
                 "DistSamplerSeedHook", "ProgressBarHook", "OptimizerHook", "ClosureHook"):
        assert name in HOOKS


def test_an_unknown_hook_name_is_a_config_error_suggesting_the_closest():
    with pytest.raises(ConfigError, match="unknown hook type 'ChekpointHook'; did you mean "
                                          "'CheckpointHook'"):
        HOOKS.get("ChekpointHook")
    with pytest.raises(ConfigError, match="did you mean 'LoggerHook'"):
        HOOKS.build({"type": "LogerHook"})


def test_unknown_names_in_the_torch_registries_suggest_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'CrossEntropyLoss'"):
        LOSSES.get("CrossEntropy")
    with pytest.raises(ConfigError, match="did you mean 'OptimWrapper'"):
        OPTIM_WRAPPERS.get("OptimWraper")


def test_a_taken_name_cannot_be_registered_again():
    with pytest.raises(ConfigError, match="'EpochBasedTrainLoop' is already registered in the "
                                          "loop registry"):
        LOOPS.register(IterBasedTrainLoop, name="EpochBasedTrainLoop")
    assert LOOPS.get("EpochBasedTrainLoop") is EpochBasedTrainLoop
    with pytest.raises(ConfigError, match="already registered"):
        OPTIMIZERS.register(torch.optim.Adam, name="SGD")
    assert OPTIMIZERS.get("SGD") is torch.optim.SGD


def test_tensor_dataset_is_registered_for_dataloader_configs():
    assert DATASETS.get("TensorDataset") is torch.utils.data.TensorDataset


def _fresh_python(code: str) -> str:
    """Run ``code`` in a new interpreter (nothing of hookline.compat imported yet)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_an_unloaded_scope_is_named_and_compats_scopes_load_when_named():
    """The engine never imports hookline.compat (a layer above it): the ``hookline`` package
    maps the ``mmengine`` / ``mmcv`` scopes to compat's modules (``SCOPE_MODULES``), so the
    first name of such a scope imports it, from Python as from a config file; a name of an
    unknown scope is one ConfigError saying so."""
    out = _fresh_python(
        "import sys, torch\n"
        "from hookline.core import ConfigError\n"
        "from hookline.engine.registries import HOOKS, PARAM_SCHEDULERS\n"
        "HOOKS.get('CheckpointHook')\n"
        "try:\n"
        "    PARAM_SCHEDULERS.get('nosuchscope.LinearLR')\n"
        "except ConfigError as err:\n"
        "    print('refused:', 'no param_scheduler registry of scope' in str(err))\n"
        "print('hookline.compat.mmengine' in sys.modules)\n"
        "print(PARAM_SCHEDULERS.get('mmengine.LinearLR').__module__)\n"
        "from hookline.app import resolve_config\n"
        "resolve_config({'model': {'type': 'DigitsCNN'}, 'optimizer': {'type': 'SGD', 'lr': 0.1},\n"
        "    'hooks': [{'type': 'mmcv.EMAHook'}]})\n"
        "print(HOOKS.get('mmcv.CheckpointHook').__module__)\n")
    lines = out.split("\n")
    assert lines[:4] == ["refused: True", "False", "hookline.compat.mmengine.optim.scheduler",
                         "hookline.compat.mmcv.runner.hooks.adapters"]
