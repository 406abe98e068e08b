"""Checkpoints moving between tools, as MMEngine's users move them: load_checkpoint's MMEngine
signature, plain state_dict files, a new head when fine-tuning, weights-only exports that
never become the file a resume continues from."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import CheckpointError, ConfigError, Runner
from hookline.engine.checkpoint import read_latest


class Net(torch.nn.Module):
    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, classes)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def make_runner(work_dir, **kwargs) -> Runner:
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 3, (16,)))
    return Runner(Net(), optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(data, batch_size=4), max_epochs=2,
                  work_dir=work_dir, default_hooks={"logger": None, "progress": None}, **kwargs)


def test_load_checkpoint_takes_mmengines_positional_map_location(tmp_path):
    runner = make_runner(tmp_path / "run")
    runner.train()
    path = runner.save_checkpoint(tmp_path / "full.pth")
    runner.model.fc1.weight.data.zero_()
    runner.load_checkpoint(path, "cpu")  # MMEngine: (filename, map_location): weights only
    assert runner.iter == 8 and runner.model.fc1.weight.abs().sum() > 0
    with pytest.raises(ConfigError, match="second argument is MMEngine's map_location"):
        runner.load_checkpoint(path, True)
    with pytest.raises(ConfigError, match="revise_keys must be a list"):
        runner.load_checkpoint(path, revise_keys="module.")


def test_a_plain_state_dict_file_and_a_new_head_load_as_in_mmengine(tmp_path):
    torch.manual_seed(1)
    pretrained = Net(classes=5)
    torch.save(pretrained.state_dict(), tmp_path / "head5.pth")
    runner = make_runner(tmp_path / "run", load_from=tmp_path / "head5.pth")
    runner.train()  # the weights go in before training
    log = (tmp_path / "run" / "log.txt").read_text(encoding="utf-8")
    assert "weights of another shape, not loaded: fc2.weight [5, 8] (model: [3, 8])" in log
    fresh = make_runner(tmp_path / "fresh")
    fresh.load_checkpoint(tmp_path / "head5.pth")
    assert torch.equal(fresh.model.fc1.weight, pretrained.fc1.weight)  # the body loaded
    with pytest.raises(CheckpointError, match=r"state_dict\['fc2.weight'\] has shape \[5, 8\]"):
        fresh.load_checkpoint(tmp_path / "head5.pth", strict=True)
    torch.save({"module." + k: v for k, v in pretrained.state_dict().items()},
               tmp_path / "ddp.pth")
    fresh.load_checkpoint(tmp_path / "ddp.pth")  # revise_keys' default strips module.
    assert torch.equal(fresh.model.fc1.weight, pretrained.fc1.weight)
    torch.save({"x": torch.ones(1)}, tmp_path / "other.pth")
    with pytest.raises(CheckpointError, match="another model"):
        fresh.load_checkpoint(tmp_path / "other.pth")


def test_a_nested_foreign_file_names_where_its_weights_are(tmp_path):
    torch.save({"model": Net().state_dict(), "epoch": 3}, tmp_path / "nested.pth")
    with pytest.raises(CheckpointError, match=r"under 'model': load torch.load\(path\)\['model'\]"):
        make_runner(tmp_path / "run").load_checkpoint(tmp_path / "nested.pth")


def test_a_weights_only_export_never_becomes_what_resume_auto_continues(tmp_path):
    work_dir = tmp_path / "run"
    runner = make_runner(work_dir)
    runner.train()
    assert read_latest(work_dir).name == "epoch_2.pth"
    runner.save_checkpoint(work_dir, "weights_export.pth", save_optimizer=False)
    assert read_latest(work_dir).name == "epoch_2.pth"  # the pointer stays on the full one
    (work_dir / "latest").unlink()  # without it, a full file of the same iteration still wins
    resumed = make_runner(work_dir, resume="auto")
    resumed.train()
    log = (work_dir / "log.txt").read_text(encoding="utf-8")
    assert f"resumed from {work_dir / 'epoch_2.pth'}" in log
    assert "optimizer starts fresh" not in log
