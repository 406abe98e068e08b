"""``torch.compile(model)`` in a real Runner: checkpoints hold the plain model's keys and
load either way; a step method on the compiled wrapper warns that it runs uncompiled; the
plain-forward path (``loss_fn=``) runs the compiled forward. ``backend="eager"`` keeps it to
dynamo's tracing (seconds on CPU, no C compiler)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner

dynamo = pytest.importorskip("torch._dynamo")
if not hasattr(torch, "compile"):  # pragma: no cover
    pytest.skip("torch.compile is not available", allow_module_level=True)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Linear(4, 8)
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.body(x)))


class StepNet(Net):
    def training_step(self, batch: Any) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)


def loader() -> DataLoader:
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(16, 4, generator=g), torch.randint(0, 2, (16,), generator=g))
    return DataLoader(data, batch_size=4)


def runner(model: torch.nn.Module, tmp_path: Path, **kw: Any) -> Runner:
    return Runner(model, optimizer={"type": "SGD", "lr": 0.1}, train_dataloader=loader(),
                  max_epochs=1, work_dir=str(tmp_path),
                  default_hooks={"logger": None, "progress": None}, **kw)


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Any:
    dynamo.reset()
    yield
    dynamo.reset()


def test_a_compiled_models_checkpoint_has_plain_keys_and_loads_both_ways(tmp_path):
    torch.manual_seed(0)
    plain = StepNet()
    with pytest.warns(UserWarning, match="runs on the uncompiled module"):
        runner(torch.compile(plain, backend="eager"), tmp_path / "a").train()
    path = tmp_path / "a" / "epoch_1.pth"
    saved = torch.load(path, weights_only=False)["state_dict"]
    assert sorted(saved) == sorted(plain.state_dict())  # no "_orig_mod." prefix

    fresh = StepNet()
    runner(fresh, tmp_path / "b", load_from=str(path)).load_checkpoint(str(path))
    assert all(torch.equal(a, b) for a, b in zip(fresh.parameters(), plain.parameters()))

    into_compiled = StepNet()  # a plain file into torch.compile(model)
    wrapped = torch.compile(into_compiled, backend="eager")
    runner(wrapped, tmp_path / "c").load_checkpoint(str(path))
    assert all(torch.equal(a, b) for a, b in zip(into_compiled.parameters(), plain.parameters()))


def test_a_checkpoint_with_orig_mod_keys_loads_into_the_plain_model(tmp_path):
    torch.manual_seed(0)
    trained = StepNet()
    runner(trained, tmp_path / "a").train()
    path = tmp_path / "a" / "epoch_1.pth"
    checkpoint = torch.load(path, weights_only=False)
    checkpoint["state_dict"] = {f"_orig_mod.{k}": v for k, v in checkpoint["state_dict"].items()}
    torch.save(checkpoint, tmp_path / "prefixed.pth")
    fresh = StepNet()
    runner(fresh, tmp_path / "b", resume=str(tmp_path / "prefixed.pth")).train()  # resumes
    assert all(torch.equal(a, b) for a, b in zip(fresh.parameters(), trained.parameters()))


def test_the_loss_fn_path_runs_the_compiled_forward(tmp_path):
    from torch._dynamo.utils import counters  # noqa: PLC0415

    counters.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        runner(torch.compile(Net(), backend="eager"), tmp_path,
               loss_fn=torch.nn.CrossEntropyLoss()).train()
    assert not [w for w in seen if "uncompiled" in str(w.message)]
    assert counters["stats"]["unique_graphs"] >= 1


def test_a_training_step_on_the_compiled_wrapper_compiles_nothing_and_warns(tmp_path):
    from torch._dynamo.utils import counters  # noqa: PLC0415

    counters.clear()
    with pytest.warns(UserWarning, match=r"torch.compile\(StepNet\).*self.net = torch.compile"):
        runner(torch.compile(StepNet(), backend="eager"), tmp_path).train()
    assert not counters["stats"].get("unique_graphs")
