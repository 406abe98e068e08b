"""A loss that cannot be computed or trained on is one clear error at the first iteration,
naming the loss function and what it got (the original exception chained); on the command
line, one ``error:`` line. Nothing is checked on the normal path (see test_host_syncs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner
from hookline.engine.step_loss import LossError


def data(classes: int = 2) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(32, 4, generator=generator)
    return TensorDataset(x, torch.randint(0, classes, (32,), generator=generator))


def train(tmp_path: Path, model=None, loss_fn=None, classes: int = 2, **kwargs) -> Runner:
    torch.manual_seed(0)
    runner = Runner(model if model is not None else torch.nn.Linear(4, 2),
                    optimizer={"type": "SGD", "lr": 0.1}, loss_fn=loss_fn,
                    train_dataloader=DataLoader(data(classes), batch_size=16), max_epochs=1,
                    work_dir=tmp_path, default_hooks={"progress": None, "logger": None},
                    **kwargs)
    runner.train()
    return runner


def test_an_unreduced_loss_names_its_shape_and_how_to_reduce_it(tmp_path):
    with pytest.raises(LossError) as caught:
        train(tmp_path, loss_fn=torch.nn.CrossEntropyLoss(reduction="none"))
    assert str(caught.value) == (
        "loss_fn CrossEntropyLoss returned a loss of shape [16]; the loss must be a 0-d tensor "
        "(one number) to train on: reduce it (reduction='mean' or 'sum', not 'none')")
    assert isinstance(caught.value, ConfigError)
    assert "iteration 0" in " ".join(getattr(caught.value, "__notes__", []))


class VectorLoss(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(4, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y, reduction="none")


def test_a_training_step_returning_an_unreduced_loss_is_named(tmp_path):
    with pytest.raises(LossError, match=r"^VectorLoss\.training_step returned a loss of shape "
                                        r"\[16\]; .*\.mean\(\)"):
        train(tmp_path, model=VectorLoss())


def test_a_loss_of_shape_1_trains_as_torch_allows(tmp_path):
    runner = train(tmp_path, loss_fn=lambda p, t: torch.nn.functional.cross_entropy(p, t)[None])
    assert runner.iter == 2


@pytest.mark.filterwarnings("ignore:Using a target size")
def test_a_loss_for_other_targets_names_the_shapes_and_chains_the_cause(tmp_path):
    with pytest.raises(LossError) as caught:
        train(tmp_path, loss_fn=torch.nn.MSELoss())
    message = str(caught.value)
    assert message.startswith("loss_fn MSELoss failed on preds (16, 2) float32 and targets "
                              "(16,) int64: ")
    assert "CrossEntropyLoss" in message
    assert isinstance(caught.value.__cause__, RuntimeError)


class DictForward(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(4, 2)

    def forward(self, x):
        return {"logits": self.net(x)}


def test_a_forward_returning_a_dict_says_how_to_fit_loss_fn(tmp_path):
    with pytest.raises(LossError) as caught:
        train(tmp_path, model=DictForward(), loss_fn=torch.nn.CrossEntropyLoss())
    message = str(caught.value)
    assert message.startswith("loss_fn CrossEntropyLoss failed on preds dict with keys "
                              "['logits'] and targets (16,) int64")
    assert "training_step(self, batch, batch_idx)" in message
    assert isinstance(caught.value.__cause__, TypeError)


def test_more_classes_in_the_data_than_the_model_has_is_named(tmp_path):
    with pytest.raises(LossError, match=r"class indices from 0 to 4, but preds has 2 classes"):
        train(tmp_path, loss_fn=torch.nn.CrossEntropyLoss(), classes=5)


def test_validation_with_loss_fn_names_the_loss_too(tmp_path):
    runner = Runner(DictForward(), loss_fn=torch.nn.CrossEntropyLoss(),
                    val_dataloader=DataLoader(data(), batch_size=16), work_dir=tmp_path,
                    default_hooks={"progress": None, "logger": None})
    with pytest.raises(LossError, match="loss_fn CrossEntropyLoss failed on preds dict"):
        runner.val()


def test_out_of_memory_in_the_loss_is_not_renamed(tmp_path):
    def oom(preds, targets):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    with pytest.raises(torch.cuda.OutOfMemoryError):
        train(tmp_path, loss_fn=oom)


def run_cli(tmp_path: Path, **changes) -> subprocess.CompletedProcess:
    config = {"model": {"type": "DigitsCNN"}, "loss_fn": {"type": "CrossEntropyLoss"},
              "optimizer": {"type": "Adam", "lr": 0.003},
              "train_dataloader": {"dataset": {"type": "DigitsDataset", "split": "train"},
                                   "batch_size": 32},
              "max_epochs": 1, "device": "cpu", **changes}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return subprocess.run([sys.executable, "-m", "hookline", "train", "run.yaml", "--work-dir",
                           str(tmp_path / "work"), "--no-curves"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1",
                               "PYTHONWARNINGS": "ignore"})


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"loss_fn": {"type": "MSELoss"}},
     "error: loss_fn MSELoss failed on preds (32, 10) float32 and targets (32,) int64: "),
    ({"model": {"type": "DigitsCNN", "num_classes": 5}},
     "error: loss_fn CrossEntropyLoss failed on preds (32, 5) float32 and targets (32,) int64: "),
], ids=["MSELoss with class targets", "num_classes below the data's"])
def test_the_command_line_shows_one_error_line(tmp_path, changes, fragment):
    done = run_cli(tmp_path, **changes)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(fragment), done.stderr
