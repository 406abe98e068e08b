"""Config check messages: an optim_wrapper constructor is accepted, mmcv's lr_config points at
LrUpdaterHook / param_scheduler, a bare optimizer name is suggested back as {type: name}, and
a misnamed stage is never pointed at a private method."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import hookline.compat.mmengine.optim  # noqa: F401  (registers DefaultOptimWrapperConstructor)
from hookline import Hook, Runner
from hookline.app.config import build_runner
from hookline.core import ConfigError
from hookline.engine.stage_lint import HookStageWarning, check_stage_names


def _cfg(**extra):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(8, 4, generator=g), torch.randint(0, 2, (8,), generator=g))
    cfg = {"model": torch.nn.Linear(4, 2), "loss_fn": {"type": "CrossEntropyLoss"},
           "optimizer": {"type": "SGD", "lr": 0.1}, "max_epochs": 1,
           "train_dataloader": DataLoader(data, batch_size=4),
           "default_hooks": {"progress": None}}
    cfg.update(extra)
    return cfg


def test_optim_wrapper_constructor_accepted_and_trains(tmp_path):
    cfg = _cfg(optimizer=None,
               optim_wrapper={"constructor": "DefaultOptimWrapperConstructor",
                              "optimizer": {"type": "SGD", "lr": 0.1}})
    del cfg["optimizer"]
    runner = build_runner(cfg, work_dir=tmp_path, for_training=True)
    before = runner.model.weight.detach().clone()
    runner.train()
    assert not torch.equal(before, runner.model.weight)
    cfg["optim_wrapper"]["constructor"] = "NoSuchConstructor"
    with pytest.raises(ConfigError, match="NoSuchConstructor"):
        build_runner(cfg, work_dir=tmp_path / "b", for_training=True)


def test_lr_config_points_at_lr_updater_hook(tmp_path):
    with pytest.raises(ConfigError, match=r"'lr_config'.*LrUpdaterHook.*param_scheduler"):
        build_runner(_cfg(lr_config={"policy": "step", "step": [2]}), work_dir=tmp_path,
                     for_training=True)
    with pytest.raises(ConfigError, match=r"lr_config.*LrUpdaterHook"):  # Runner(...) alike
        Runner(torch.nn.Linear(4, 2), lr_config={"policy": "step"})


def test_bare_optimizer_name_suggested_back(tmp_path):
    with pytest.raises(ConfigError, match=r"e\.g\. \{type: Adam\}; got 'Adam'"):
        build_runner(_cfg(optimizer="Adam"), work_dir=tmp_path, for_training=True)


def test_stage_suggestion_is_public():
    class EpochHook(Hook):
        def before_epoch(self, runner):
            pass

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_stage_names(EpochHook())
    messages = [str(w.message) for w in caught if issubclass(w.category, HookStageWarning)]
    assert len(messages) == 1 and "did you mean 'before_train_epoch'?" in messages[0]
