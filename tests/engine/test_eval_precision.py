"""Evaluation precision: full precision by default whatever the optimizer wrapper trains in
(MMEngine's ``ValLoop(fp16=False)``), ``fp16=True`` through ``val_loop=`` / ``test_loop=``."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner
from hookline.app.config import build_runner
from hookline.engine import LOOPS, ValLoop
from hookline.engine import TestLoop as EngineTestLoop

AMP = {"type": "AmpOptimWrapper", "optimizer": {"type": "SGD", "lr": 0.1}}


class Net(torch.nn.Module):
    """Records the dtype of every forward's output (training and evaluation)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                      torch.nn.Linear(32, 2))
        self.dtypes: list[torch.dtype] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.fc(x)
        self.dtypes.append(out.dtype)
        return out


def loader() -> DataLoader:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 16, generator=generator)
    return DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=32)


def make(tmp_path, model: Net, **kwargs) -> Runner:
    return Runner(model, loss_fn=torch.nn.CrossEntropyLoss(), train_dataloader=loader(),
                  val_dataloader=loader(), test_dataloader=loader(), max_epochs=1,
                  metrics={"accuracy": "accuracy"}, work_dir=tmp_path,
                  default_hooks={"progress": None, "logger": None, "checkpoint": None}, **kwargs)


def test_amp_training_evaluates_in_full_precision_by_default(tmp_path):
    plain, amp = Net(), Net()
    reference = make(tmp_path / "fp32", plain, optimizer={"type": "SGD", "lr": 0.1})
    run = make(tmp_path / "amp", amp, optim_wrapper=AMP)
    assert run.val() == reference.val() and run.test() == reference.test()  # exactly
    assert set(amp.dtypes) == {torch.float32}
    amp.dtypes.clear()
    run.train()  # training autocasts, its validation does not
    assert torch.bfloat16 in amp.dtypes and amp.dtypes[-1] == torch.float32
    assert amp.dtypes[-len(loader()):] == [torch.float32] * len(loader())


def test_fp16_true_runs_the_steps_under_the_training_autocast(tmp_path):
    model = Net()
    run = make(tmp_path, model, optim_wrapper={**AMP, "dtype": "bfloat16"},
               val_loop={"fp16": True}, test_loop={"type": "TestLoop", "fp16": True})
    assert isinstance(run.val_loop, ValLoop) and run.val_loop.fp16
    assert isinstance(run.test_loop, EngineTestLoop) and run.test_loop.fp16
    run.val()
    run.test()
    assert set(model.dtypes) == {torch.bfloat16}


def test_fp16_without_amp_uses_the_devices_autocast(tmp_path):
    model = Net()
    run = make(tmp_path, model, optimizer={"type": "SGD", "lr": 0.1}, val_loop={"fp16": True})
    run.val()
    assert set(model.dtypes) == {torch.bfloat16}  # torch's CPU autocast dtype
    model.dtypes.clear()
    run.test()  # the test loop was not asked to
    assert set(model.dtypes) == {torch.float32}


@LOOPS.register(force=True)
class CountingValLoop(ValLoop):
    """A user's validation loop class, chosen by name."""

    runs = 0

    def run(self):
        type(self).runs += 1
        return super().run()


def test_val_loop_names_a_loop_class(tmp_path):
    run = make(tmp_path, Net(), optimizer={"type": "SGD", "lr": 0.1}, val_loop="CountingValLoop")
    run.val()
    assert type(run.val_loop) is CountingValLoop and CountingValLoop.runs == 1
    assert run.val_loop.fp16 is False


@pytest.mark.parametrize("kwargs, fragment", [
    ({"val_loop": True}, "val_loop must be a LOOPS name or a config dict"),
    ({"val_loop": {"fp16": "yes"}}, "ValLoop fp16 must be true or false"),
    ({"test_loop": {"metrics": {}}}, "test_metrics="),
    ({"val_loop": {"fp16": True}, "val_dataloader": None}, "no val_dataloader"),
    ({"val_cfg": {"fp16": True}}, "val_loop={'type': 'ValLoop', 'fp16': True}"),
])
def test_bad_eval_loop_arguments_are_config_errors(tmp_path, kwargs, fragment):
    base = dict(model=Net(), loss_fn=torch.nn.CrossEntropyLoss(), val_dataloader=loader(),
                work_dir=tmp_path)
    with pytest.raises(ConfigError) as info:
        Runner(**{**base, **kwargs})
    assert fragment in str(info.value)


def test_a_config_sets_fp16_and_mmengines_val_cfg_says_what_to_write(tmp_path):
    cfg = {"model": {"type": "DigitsCNN"}, "loss_fn": {"type": "CrossEntropyLoss"},
           "val_dataloader": {"dataset": {"type": "DigitsDataset", "split": "val"},
                              "batch_size": 128},
           "metrics": {"accuracy": "accuracy"}, "val_loop": {"fp16": True},
           "default_hooks": {"progress": None}}
    run = build_runner(cfg, work_dir=tmp_path / "a")
    assert run.val_loop.fp16 and run.cfg["val_loop"] == {"fp16": True}
    with pytest.raises(ConfigError, match="val_loop.*no val_dataloader"):
        build_runner({**cfg, "val_dataloader": None}, work_dir=tmp_path / "b")
    with pytest.raises(ConfigError, match="got unexpected argument.*fp61"):
        build_runner({**cfg, "val_loop": {"fp61": True}}, work_dir=tmp_path / "c")
    with pytest.raises(ConfigError) as info:
        build_runner({**cfg, "val_cfg": {"fp16": True}}, work_dir=tmp_path / "d")
    assert "val_loop" in str(info.value) and "validation runs from val_dataloader" in str(info.value)
