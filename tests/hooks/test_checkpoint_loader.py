"""CheckpointLoaderHook on real files: plain state dicts (with DDP's ``module.`` prefix),
hookline checkpoints, partial and mismatched weights, strict mode, and resume winning."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Hook, HookError, Runner
from hookline.engine.checkpoint import CheckpointError
from hookline.hooks import CheckpointLoaderHook


def net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(),
                               torch.nn.Linear(6, 2))


class AtStart(Hook):
    """The model's weights when training starts."""

    def before_train(self, runner) -> None:
        self.weights = {k: v.clone() for k, v in runner.model.state_dict().items()}


def make_runner(work_dir, hooks, *, resume=None, max_epochs=1, checkpoint=None) -> Runner:
    torch.manual_seed(0)
    x = torch.randn(16, 4)
    data = TensorDataset(x, (x[:, 0] > 0).long())
    return Runner(net(), optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(data, batch_size=4),
                  val_dataloader=DataLoader(data, batch_size=8), max_epochs=max_epochs,
                  work_dir=work_dir, device="cpu", hooks=hooks, resume=resume,
                  default_hooks={"logger": None, "progress": None, "checkpoint": checkpoint})


def pretrained() -> dict[str, torch.Tensor]:
    torch.manual_seed(123)
    return {k: v.clone() for k, v in net().state_dict().items()}


def test_plain_state_dict_with_module_prefix_is_loaded_before_training(tmp_path):
    source = pretrained()
    torch.save({f"module.{k}": v for k, v in source.items()}, tmp_path / "ddp.pth")
    loader, start = CheckpointLoaderHook(tmp_path / "ddp.pth"), AtStart()
    make_runner(tmp_path / "run", [loader, start]).train()
    assert loader.missing_keys == loader.unexpected_keys == loader.mismatched_keys == []
    for key, value in source.items():
        assert torch.equal(start.weights[key], value), key


def test_hookline_checkpoint_and_mmcv_style_dict_are_accepted(tmp_path):
    make_runner(tmp_path / "a", [], checkpoint={"type": "CheckpointHook"}).train()
    saved = torch.load(tmp_path / "a" / "epoch_1.pth", weights_only=True)["state_dict"]
    start = AtStart()
    make_runner(tmp_path / "b", [CheckpointLoaderHook(str(tmp_path / "a" / "epoch_1.pth")),
                                 start]).train()
    for key, value in saved.items():
        assert torch.equal(start.weights[key], value), key
    torch.save({"meta": {"mmcv_version": "1.7"}, "state_dict": pretrained()}, tmp_path / "m.pth")
    hook = CheckpointLoaderHook(tmp_path / "m.pth")
    model = net()
    assert hook.load(model) == ([], [])
    assert torch.equal(model[0].weight, pretrained()["0.weight"])


def test_partial_weights_report_missing_unexpected_and_wrong_shapes(tmp_path):
    source = pretrained()
    partial = {k: v for k, v in source.items() if not k.startswith("3.")}
    partial["head.weight"] = torch.zeros(3)
    partial["1.weight"] = torch.ones(5)  # wrong shape: skipped, reported
    torch.save(partial, tmp_path / "partial.pth")
    hook, start = CheckpointLoaderHook(tmp_path / "partial.pth"), AtStart()
    runner = make_runner(tmp_path / "run", [hook, start])
    fresh = {k: v.clone() for k, v in runner.model.state_dict().items()}
    runner.train()
    assert hook.missing_keys == ["1.weight", "3.bias", "3.weight"]
    assert hook.unexpected_keys == ["head.weight"]
    assert hook.mismatched_keys == [("1.weight", (5,), (6,))]
    assert torch.equal(start.weights["0.weight"], source["0.weight"])
    assert torch.equal(start.weights["3.weight"], fresh["3.weight"])
    assert torch.equal(start.weights["1.weight"], fresh["1.weight"])
    log = (tmp_path / "run" / "log.txt").read_text()
    assert "missing keys ['1.weight', '3.bias', '3.weight']" in log and "head.weight" in log


def test_strict_mismatch_fails_before_training(tmp_path):
    torch.save({"0.weight": torch.zeros(6, 4)}, tmp_path / "w.pth")
    runner = make_runner(tmp_path / "run", [CheckpointLoaderHook(tmp_path / "w.pth", strict=True)])
    with pytest.raises(HookError, match="strict=True and the weights do not match") as info:
        runner.train()
    assert isinstance(info.value.__cause__, CheckpointError) and runner.iter == 0


def test_unsafe_or_foreign_files_are_checkpoint_errors(tmp_path):
    torch.save({"model": torch.nn.Linear(2, 2)}, tmp_path / "pickled.pth")  # a pickled module
    with pytest.raises(CheckpointError, match="weights_only"):
        CheckpointLoaderHook(tmp_path / "pickled.pth").load(net())
    torch.save({"epoch": 3, "lr": 0.1}, tmp_path / "numbers.pth")
    with pytest.raises(CheckpointError, match="not a state dict"):
        CheckpointLoaderHook(tmp_path / "numbers.pth").load(net())
    with pytest.raises(FileNotFoundError):
        CheckpointLoaderHook(tmp_path / "missing.pth").load(net())


def test_custom_revise_keys_and_bad_ones(tmp_path):
    torch.save({f"backbone.{k}": v for k, v in pretrained().items()}, tmp_path / "b.pth")
    hook = CheckpointLoaderHook(tmp_path / "b.pth", revise_keys=[(r"^backbone\.", "")])
    assert hook.load(net()) == ([], [])
    with pytest.raises(ConfigError, match="not a regex"):
        CheckpointLoaderHook(tmp_path / "b.pth", revise_keys=[("(", "")])
    with pytest.raises(ConfigError, match="pairs"):
        CheckpointLoaderHook(tmp_path / "b.pth", revise_keys=["module."])


def test_resume_wins_and_weights_load_once_per_runner(tmp_path):
    torch.save(pretrained(), tmp_path / "w.pth")
    make_runner(tmp_path / "run", [CheckpointLoaderHook(tmp_path / "w.pth")], max_epochs=2,
                checkpoint={"type": "CheckpointHook"}).train()
    saved = torch.load(tmp_path / "run" / "epoch_1.pth", weights_only=True)["state_dict"]
    start = AtStart()
    runner = make_runner(tmp_path / "run2", [CheckpointLoaderHook(tmp_path / "w.pth"), start],
                         max_epochs=2, resume=tmp_path / "run" / "epoch_1.pth")
    runner.train()
    for key, value in saved.items():
        assert torch.equal(start.weights[key], value), key
    trained = {k: v.clone() for k, v in runner.model.state_dict().items()}
    runner.val()  # a later val() keeps the trained weights
    for key, value in runner.model.state_dict().items():
        assert torch.equal(value, trained[key]), key
