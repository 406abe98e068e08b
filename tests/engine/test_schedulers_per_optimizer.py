"""param_scheduler with several optimizers (an OptimWrapperDict): MMEngine's dict by optimizer
name, or one list built for each optimizer; checked before anything is built."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner


class TinyGAN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.generator = torch.nn.Linear(4, 4)
        self.discriminator = torch.nn.Linear(4, 1)

    def train_step(self, data, optim_wrapper):
        (real,) = data
        fake = self.generator(real)
        d_loss = (self.discriminator(fake.detach()) - self.discriminator(real)).mean()
        optim_wrapper["discriminator"].update_params(d_loss)
        g_loss = -self.discriminator(fake).mean()
        optim_wrapper["generator"].update_params(g_loss)
        return {"d_loss": d_loss.detach(), "g_loss": g_loss.detach()}


WRAPPERS = {"generator": {"optimizer": {"type": "Adam", "lr": 1e-3}},
            "discriminator": {"optimizer": {"type": "SGD", "lr": 1e-2}}}


def run(tmp_path, param_scheduler, epochs=3) -> dict[str, float]:
    torch.manual_seed(0)
    runner = Runner(TinyGAN(), optim_wrapper=WRAPPERS, param_scheduler=param_scheduler,
                    train_dataloader=DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4),
                    max_epochs=epochs, work_dir=tmp_path,
                    default_hooks={"logger": None, "progress": None, "checkpoint": None})
    runner.train()
    return {name: wrapper.optimizer.param_groups[0]["lr"]
            for name, wrapper in runner.optim_wrapper.items()}


def test_one_list_is_built_for_every_optimizer(tmp_path):
    lrs = run(tmp_path, [{"type": "StepLR", "step_size": 1, "gamma": 0.5}])
    assert lrs == pytest.approx({"generator": 1e-3 / 8, "discriminator": 1e-2 / 8})


def test_a_dict_schedules_the_optimizers_it_names(tmp_path):
    lrs = run(tmp_path, {"generator": {"type": "StepLR", "step_size": 1, "gamma": 0.5},
                         "discriminator": [{"type": "StepLR", "step_size": 2, "gamma": 0.1}]})
    assert lrs == pytest.approx({"generator": 1e-3 / 8, "discriminator": 1e-3})
    assert run(tmp_path / "b", {"generator": {"type": "StepLR", "step_size": 1}})[
        "discriminator"] == 1e-2  # not named: not scheduled


@pytest.mark.parametrize(("spec", "message"), [
    ({"generatr": {"type": "StepLR", "step_size": 1}},
     r"optimizer\(s\) \['generatr'\] this run does not have; its optimizers: generator, "
     "discriminator"),
    ({"generator": {"type": "StepLR", "step_sze": 1}},
     r"param_scheduler.generator: .*'step_sze' \(did you mean 'step_size'\?\)"),
])
def test_mistakes_are_config_errors_before_anything_is_built(tmp_path, spec, message):
    with pytest.raises(ConfigError, match=message):
        run(tmp_path / "work", spec)
    assert not (tmp_path / "work").exists()
