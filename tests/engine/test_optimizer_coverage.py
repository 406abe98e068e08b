"""Training refuses an optimizer over another model and warns about parameters it leaves out."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.core import ConfigError
from hookline.engine.optimizer_coverage import check_optimizer_coverage, check_training_wrapper

QUIET = {"logger": None, "checkpoint": None}


def _loader() -> DataLoader[Any]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(16, 4, generator=generator)
    return DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=8)


def _net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _runner(work_dir: Path, model: torch.nn.Module | None = None, **kwargs: Any) -> Runner:
    options: dict[str, Any] = dict(optimizer={"type": "SGD", "lr": 0.1},
                                   loss_fn=torch.nn.CrossEntropyLoss(),
                                   train_dataloader=_loader(), max_epochs=1,
                                   work_dir=str(work_dir), default_hooks=QUIET)
    options.update(kwargs)
    return Runner(model if model is not None else _net(), **options)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "in no optimizer" in r.getMessage()]


def test_a_model_assigned_after_the_runner_was_built_is_refused(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    new = _net()
    before = [p.detach().clone() for p in new.parameters()]
    runner.model = new  # a plain attribute: still assignable
    assert runner.model is new
    with pytest.raises(ConfigError, match="none of the optimizer's .* build a new Runner|"
                                          "Build a new Runner"):
        runner.train()
    assert all(torch.equal(a, b) for a, b in zip(before, new.parameters()))


def test_an_optimizer_over_another_model_is_refused(tmp_path: Path) -> None:
    other = _net()
    runner = _runner(tmp_path, optimizer=torch.optim.SGD(other.parameters(), lr=0.1))
    with pytest.raises(ConfigError, match="none of the optimizer's 4 parameter tensors"):
        runner.train()


def test_parameters_left_out_are_named_once_and_frozen_ones_are_not(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model = _net()
    model[2].bias.requires_grad_(False)  # frozen on purpose: not reported
    runner = _runner(tmp_path, model=model,
                     optimizer=torch.optim.SGD([model[0].weight, model[2].weight], lr=0.1))
    runner.logger.propagate = True
    with caplog.at_level(logging.WARNING):
        runner.train()
        runner.train()  # again (a notebook cell run twice): not said again
    assert _warnings(caplog) == [
        "1 of the model's 3 trainable parameters are in no optimizer's param groups, so "
        "training does not update them: 0.bias (set requires_grad=False on parameters meant "
        "to stay frozen, or add them to the optimizer)"]


def test_a_complete_optimizer_says_nothing(tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    runner = _runner(tmp_path)
    runner.logger.propagate = True
    with caplog.at_level(logging.WARNING):
        runner.train()
    assert _warnings(caplog) == []


class GAN(torch.nn.Module):
    """Two submodules, each updated by its own optimizer in the model's own ``train_step``."""

    def __init__(self) -> None:
        super().__init__()
        self.generator = torch.nn.Linear(4, 4)
        self.discriminator = torch.nn.Linear(4, 1)

    def train_step(self, data: Any, optim_wrapper: Any) -> dict[str, torch.Tensor]:
        real = data[0]
        fake = self.generator(torch.randn_like(real))
        d_loss = (F.softplus(self.discriminator(fake.detach())).mean()
                  + F.softplus(-self.discriminator(real)).mean())
        optim_wrapper["discriminator"].update_params(d_loss)
        g_loss = F.softplus(-self.discriminator(fake)).mean()
        optim_wrapper["generator"].update_params(g_loss)
        return {"loss_d": d_loss.detach(), "loss_g": g_loss.detach()}


def test_several_optimizers_count_together(tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    wrappers = {"generator": {"optimizer": {"type": "SGD", "lr": 0.1}},
                "discriminator": {"optimizer": {"type": "SGD", "lr": 0.1}}}
    runner = _runner(tmp_path, model=GAN(), optimizer=None, loss_fn=None,
                     optim_wrapper=wrappers)
    runner.logger.propagate = True
    with caplog.at_level(logging.WARNING):
        runner.train()
    assert _warnings(caplog) == []
    assert runner.iter == 2


def test_a_ddp_wrapped_model_is_compared_by_its_module() -> None:
    model = torch.nn.DataParallel(_net())
    wrapper = type("Wrapper", (), {"optimizer": torch.optim.SGD(model.module.parameters(),
                                                                lr=0.1)})()
    assert check_optimizer_coverage(model, wrapper, logging.getLogger("test")) == []


def test_a_training_wrapper_around_another_model_is_refused() -> None:
    model = _net()
    check_training_wrapper(model, torch.nn.ModuleDict({"model": model}))  # a step module
    with pytest.raises(ConfigError, match="DistributedDataParallel wrapper that trains"):
        check_training_wrapper(_net(), torch.nn.ModuleDict({"model": model}))
