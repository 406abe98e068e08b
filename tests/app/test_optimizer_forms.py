"""Configs with the optimizer forms the Runner takes: an optim_wrapper without 'optimizer' for a
model with configure_optimizers(), and several optimizers with their schedulers by name; the
run summary of a model whose own train_step logs its own names."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from hookline.app import resolve_config
from hookline.cli import main
from hookline.core import ConfigError

MODELS_FILE = '''
import torch
from hookline import MODELS


@MODELS.register(force=True)
class OwnOptimizer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.layer(x.flatten(1))

    def training_step(self, batch):
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


@MODELS.register(force=True)
class TwoOptimizers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = torch.nn.Linear(64, 64)
        self.discriminator = torch.nn.Linear(64, 1)

    def train_step(self, data, optim_wrapper):
        real = data[0].flatten(1).float()
        fake = self.generator(real)
        d_loss = (self.discriminator(fake.detach()) - self.discriminator(real)).mean()
        optim_wrapper["discriminator"].update_params(d_loss)
        g_loss = -self.discriminator(fake).mean()
        optim_wrapper["generator"].update_params(g_loss)
        return {"d_loss": d_loss.detach(), "g_loss": g_loss.detach()}
'''

LOADER = {"dataset": {"type": "DigitsDataset", "split": "train"}, "batch_size": 128}
TWO = {"generator": {"optimizer": {"type": "Adam", "lr": 1e-3}},
       "discriminator": {"optimizer": {"type": "SGD", "lr": 1e-2}}}


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "forms_models.py").write_text(MODELS_FILE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("forms_models", None)


def config(model: str, **keys) -> dict:
    return {"custom_imports": ["forms_models"], "model": {"type": model},
            "train_dataloader": LOADER, "max_epochs": 1,
            "default_hooks": {"progress": None, "checkpoint": None}, **keys}


def train(project: Path, cfg: dict, capsys) -> str:
    path = project / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    assert main(["train", str(path), "--work-dir", str(project / "out")]) == 0
    return capsys.readouterr().out


def test_an_optim_wrapper_without_optimizer_steps_configure_optimizers_one(project, capsys):
    out = train(project, config("OwnOptimizer", optim_wrapper={
        "clip_grad": {"max_norm": 1.0}, "accumulative_counts": 2}), capsys)
    assert "last training loss" in out.splitlines()[-2]


def test_an_optim_wrapper_without_optimizer_needs_configure_optimizers(project):
    with pytest.raises(ConfigError, match="TwoOptimizers has none"):
        resolve_config(config("TwoOptimizers", optim_wrapper={"clip_grad": {"max_norm": 1.0}}))
    assert not (project / "out").exists()


def test_schedulers_by_optimizer_name_and_the_summary_of_an_own_train_step(project, capsys):
    out = train(project, config("TwoOptimizers", optim_wrapper=TWO, param_scheduler={
        "generator": {"type": "StepLR", "step_size": 1, "gamma": 0.5, "by_epoch": False}}),
        capsys)
    # the model's own names, not "no training left to do"
    assert "last training values: d_loss " in out and ", g_loss " in out
    with pytest.raises(ConfigError, match=r"optimizer\(s\) \['generatr'\]"):
        resolve_config(config("TwoOptimizers", optim_wrapper=TWO, param_scheduler={
            "generatr": {"type": "StepLR", "step_size": 1}}))
