"""param_scheduler objects must be built on the optimizer the run trains with, and a scheduler
class is refused: each one ConfigError when the Runner is built, before anything is written."""

from __future__ import annotations

import pytest
import torch
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner
from hookline.compat.mmengine.optim.scheduler import StepLR as MMStepLR
from hookline.engine.optim_wrapper import OptimWrapper


def data() -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(32, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


def make(work_dir, model=None, **kwargs) -> Runner:
    torch.manual_seed(0)
    return Runner(model if model is not None else torch.nn.Linear(4, 2),
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(data(), batch_size=8), max_epochs=3,
                  work_dir=work_dir, default_hooks={"progress": None, "logger": None}, **kwargs)


def test_a_scheduler_on_another_optimizer_than_the_configs_is_refused(tmp_path):
    model = torch.nn.Linear(4, 2)
    mine = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ConfigError) as caught:
        make(tmp_path / "run", model, optimizer={"type": "SGD", "lr": 0.1},
             param_scheduler=lr_scheduler.StepLR(mine, step_size=1, gamma=0.1))
    message = str(caught.value)
    assert message.startswith("param_scheduler is a StepLR built on another SGD object")
    assert "optimizer={'type': 'SGD', 'lr': 0.1}" in message
    assert "constant" in message and "{'type': 'StepLR', ...}" in message
    assert not (tmp_path / "run").exists()


def test_a_scheduler_on_another_optimizer_object_is_refused_in_a_list_too(tmp_path):
    model = torch.nn.Linear(4, 2)
    used = torch.optim.SGD(model.parameters(), lr=0.1)
    other = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ConfigError, match=r"param_scheduler\[1\] is a StepLR built on another "
                                          r"SGD object .*the SGD object it was given"):
        make(tmp_path / "run", model, optimizer=used,
             param_scheduler=[{"type": "LinearLR", "start_factor": 0.5, "total_iters": 2},
                              lr_scheduler.StepLR(other, step_size=1)])
    assert not (tmp_path / "run").exists()


def test_an_optim_wrapper_config_builds_its_own_optimizer(tmp_path):
    model = torch.nn.Linear(4, 2)
    mine = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ConfigError, match=r"optim_wrapper\.optimizer=\{'type': 'SGD'"):
        make(tmp_path / "run", model, optim_wrapper={"optimizer": {"type": "SGD", "lr": 0.1}},
             param_scheduler=lr_scheduler.StepLR(mine, step_size=1))


@pytest.mark.parametrize("scheduler", [lr_scheduler.CosineAnnealingLR, [lr_scheduler.StepLR]],
                         ids=["class", "class in a list"])
def test_a_scheduler_class_is_refused_up_front(tmp_path, scheduler):
    with pytest.raises(ConfigError, match=r"param_scheduler(\[0\])? is the class "
                                          r"(CosineAnnealingLR|StepLR), which needs the "
                                          r"optimizer: give a config such as \{'type'"):
        make(tmp_path / "run", optimizer={"type": "SGD", "lr": 0.1}, param_scheduler=scheduler)
    assert not (tmp_path / "run").exists()


def lr_after(runner: Runner) -> float:
    runner.train()
    return runner.optimizer.param_groups[0]["lr"]


def test_a_scheduler_on_the_optimizer_passed_still_schedules(tmp_path):
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    runner = make(tmp_path / "a", model, optimizer=optimizer,
                  param_scheduler=lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.1))
    assert lr_after(runner) == pytest.approx(1e-4)


def test_a_scheduler_on_an_optim_wrappers_optimizer_still_schedules(tmp_path):
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for name, wrapper in (("object", OptimWrapper(optimizer)), ("config", {"optimizer": optimizer})):
        for group in optimizer.param_groups:
            group["lr"] = 0.1
            group.pop("initial_lr", None)
        runner = make(tmp_path / name, model, optim_wrapper=wrapper,
                      param_scheduler=lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.1))
        assert lr_after(runner) == pytest.approx(1e-4), name


def test_an_mmengine_scheduler_on_the_optim_wrapper_object_still_schedules(tmp_path):
    model = torch.nn.Linear(4, 2)
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    runner = make(tmp_path, model, optim_wrapper=wrapper,
                  param_scheduler=MMStepLR(wrapper, step_size=1, gamma=0.1))
    assert lr_after(runner) == pytest.approx(1e-4)


def test_scheduler_configs_with_an_optimizer_config_still_schedule(tmp_path):
    runner = make(tmp_path / "torch", optimizer={"type": "SGD", "lr": 0.1},
                  param_scheduler={"type": "StepLR", "step_size": 1, "gamma": 0.1})
    assert lr_after(runner) == pytest.approx(1e-4)
    runner = make(tmp_path / "mm", optimizer={"type": "SGD", "lr": 0.1},
                  param_scheduler={"type": "mmengine.StepLR", "step_size": 1, "gamma": 0.1})
    # MMEngine's scheduler ends with the run (end = max_epochs): no step after the last epoch
    assert lr_after(runner) == pytest.approx(1e-3)


class TinyGAN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.generator = torch.nn.Linear(4, 4)
        self.discriminator = torch.nn.Linear(4, 1)

    def train_step(self, data, optim_wrapper):
        real = data[0]
        fake = self.generator(real)
        d_loss = (self.discriminator(fake.detach()) - self.discriminator(real)).mean()
        optim_wrapper["discriminator"].update_params(d_loss)
        g_loss = -self.discriminator(fake).mean()
        optim_wrapper["generator"].update_params(g_loss)
        return {"d_loss": d_loss.detach(), "g_loss": g_loss.detach()}


def test_per_optimizer_scheduler_objects_on_their_wrappers_still_schedule(tmp_path):
    model = TinyGAN()
    g = torch.optim.Adam(model.generator.parameters(), lr=1e-3)
    d = torch.optim.SGD(model.discriminator.parameters(), lr=1e-2)
    runner = make(tmp_path / "a", model,
                  optim_wrapper={"generator": OptimWrapper(g), "discriminator": OptimWrapper(d)},
                  param_scheduler={"generator": lr_scheduler.StepLR(g, step_size=1, gamma=0.5),
                                   "discriminator": lr_scheduler.StepLR(d, step_size=1,
                                                                        gamma=0.1)})
    runner.train()
    assert g.param_groups[0]["lr"] == pytest.approx(1e-3 / 8)
    assert d.param_groups[0]["lr"] == pytest.approx(1e-5)
    swapped = TinyGAN()
    g2 = torch.optim.Adam(swapped.generator.parameters(), lr=1e-3)
    d2 = torch.optim.SGD(swapped.discriminator.parameters(), lr=1e-2)
    with pytest.raises(ConfigError, match=r"param_scheduler\.generator is a StepLR built on "
                                          r"another SGD object"):
        make(tmp_path / "b", swapped,
             optim_wrapper={"generator": OptimWrapper(g2), "discriminator": OptimWrapper(d2)},
             param_scheduler={"generator": lr_scheduler.StepLR(d2, step_size=1)})
