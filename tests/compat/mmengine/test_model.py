"""hookline.compat.mmengine.model: averaged models, BaseModel under a Runner, wrappers."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import ConfigError
from hookline.compat.mmengine.model import (
    BaseModel,
    BaseModule,
    ExponentialMovingAverage,
    MMDistributedDataParallel,
    MomentumAnnealingEMA,
    StochasticWeightAverage,
    is_model_wrapper,
)
from hookline.compat.mmengine.registry import MODELS

from ..conftest import make_runner, toy_data


def _net(value):
    net = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        net.weight.fill_(value)
    return net


@pytest.mark.parametrize(("cls", "kwargs", "expected"), [
    (ExponentialMovingAverage, {"momentum": 0.25}, 0.75 * 1 + 0.25 * 3),
    (MomentumAnnealingEMA, {"momentum": 0.01, "gamma": 1}, 0.5 * 1 + 0.5 * 3),
    (StochasticWeightAverage, {}, (1 + 3) / 2),
])
def test_averages_follow_mmengine_formulas(cls, kwargs, expected):
    source = _net(1.0)
    average = cls(source, **kwargs)
    average.update_parameters(source)  # step 0 copies
    with torch.no_grad():
        source.weight.fill_(3.0)
    average.update_parameters(source)
    assert average.module.weight.item() == pytest.approx(expected) and int(average.steps) == 2


def test_averaged_models_reload_their_step_count():
    source = _net(1.0)
    first = ExponentialMovingAverage(source, momentum=0.5, interval=2)
    for _ in range(3):
        first.update_parameters(source)
    second = ExponentialMovingAverage(source, momentum=0.5, interval=2)
    second.load_state_dict(first.state_dict())
    second.update_parameters(source)
    assert int(second.steps) == 4
    with pytest.raises(ConfigError, match="momentum must be in"):
        ExponentialMovingAverage(source, momentum=1.5)
    assert MODELS.get("ExponentialMovingAverage") is ExponentialMovingAverage


class Classifier(BaseModel):
    def __init__(self):
        super().__init__(data_preprocessor={"type": "BaseDataPreprocessor"})
        self.linear = torch.nn.Linear(4, 2)

    def forward(self, inputs, data_samples=None, mode="tensor"):
        logits = self.linear(inputs)
        if mode == "loss":
            return {"loss_cls": torch.nn.functional.cross_entropy(logits, data_samples),
                    "acc": (logits.argmax(1) == data_samples).float().mean()}
        if mode == "predict":
            return [{"pred": int(p.argmax()), "gt": int(t)} for p, t in zip(logits, data_samples)]
        return logits


def test_a_base_model_trains_and_validates_under_a_runner(tmp_path):
    runner = make_runner(tmp_path, model=Classifier(), loss_fn=None,
                         val_dataloader=DataLoader(toy_data(), batch_size=32),
                         metrics={"acc": lambda s: sum(x["pred"] == x["gt"] for x in s) / len(s)})
    before = runner.model.linear.weight.detach().clone()
    runner.train()
    assert not torch.equal(before, runner.model.linear.weight)
    hub = runner.message_hub
    assert {"train/loss", "train/loss_cls", "train/acc"} <= set(hub.keys("train/"))
    assert 0.0 <= runner.val_loop.last_metrics["acc"] <= 1.0


def test_base_module_init_weights_and_wrappers():
    module = BaseModule()
    module.init_weights()
    assert module.is_init
    with pytest.raises(ConfigError, match="init_cfg"):
        BaseModule(init_cfg={"type": "Kaiming"}).init_weights()
    assert is_model_wrapper(torch.nn.DataParallel(torch.nn.Linear(1, 1)))
    assert issubclass(MMDistributedDataParallel, torch.nn.parallel.DistributedDataParallel)
    with pytest.raises(ValueError, match="no entry"):
        Classifier().parse_losses({"acc": torch.tensor(1.0)})
