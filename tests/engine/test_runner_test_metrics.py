"""``test_metrics=``: the test loop's own metrics (MMEngine's ``test_evaluator``), by default
``metrics``."""

from __future__ import annotations

import pickle

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner


def data(seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(24, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


class Predicts(torch.nn.Module):
    """MMEngine style: the evaluation steps return data samples."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 2)

    def validation_step(self, batch):
        x, y = batch
        return [{"pred": int(o.argmax()), "gt": int(t)} for o, t in zip(self.fc(x), y)]


def top1(samples):
    return {"accuracy/top1": sum(s["pred"] == s["gt"] for s in samples) / len(samples)}


def test_the_test_loop_runs_its_own_metrics_and_validation_keeps_metrics(tmp_path):
    out = tmp_path / "preds.pkl"

    def dump(samples):  # MMEngine's DumpResults: writes the predictions, reports nothing
        out.write_bytes(pickle.dumps(samples))

    run = Runner(Predicts(), val_dataloader=DataLoader(data(1), batch_size=8),
                 test_dataloader=DataLoader(data(2), batch_size=8), metrics={"acc": top1},
                 test_metrics={"acc": top1, "dump": dump}, work_dir=tmp_path / "run",
                 default_hooks={"progress": None})
    assert list(run.test_evaluator.named_metrics) == ["acc", "dump"]
    assert list(run.val_evaluator.named_metrics) == ["acc"]
    val = run.val()
    assert not out.exists() and set(val) == {"accuracy/top1"}
    test = run.test()
    assert set(test) == {"accuracy/top1"}
    dumped = pickle.loads(out.read_bytes())
    assert len(dumped) == 24 and set(dumped[0]) == {"pred", "gt"}


def test_test_metrics_default_to_metrics_and_take_registered_names(tmp_path):
    loader = DataLoader(data(3), batch_size=8)
    run = Runner(torch.nn.Linear(4, 2), loss_fn=torch.nn.CrossEntropyLoss(), val_dataloader=loader,
                 test_dataloader=loader, metrics={"accuracy": "accuracy"}, work_dir=tmp_path / "a",
                 default_hooks={"progress": None})
    assert run.test_metrics is run.metrics and set(run.test()) == {"loss", "accuracy"}
    run = Runner(torch.nn.Linear(4, 2), loss_fn=torch.nn.CrossEntropyLoss(), val_dataloader=loader,
                 test_dataloader=loader, metrics={"accuracy": "accuracy"},
                 test_metrics={"n": lambda preds, targets: len(targets)}, work_dir=tmp_path / "b",
                 default_hooks={"progress": None})
    test = run.test()
    assert set(test) == {"loss", "n"} and test["n"] == 24 and set(run.val()) == {"loss", "accuracy"}
    run = Runner(torch.nn.Linear(4, 2), loss_fn=torch.nn.CrossEntropyLoss(), val_dataloader=loader,
                 test_dataloader=loader, metrics={"accuracy": "accuracy"}, test_metrics={},
                 work_dir=tmp_path / "c", default_hooks={"progress": None})
    assert set(run.test()) == {"loss"}  # {} is no metrics, not the default


def test_bad_test_metrics_and_mmengines_test_evaluator_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="metrics must be a dict"):
        Runner(torch.nn.Linear(4, 2), test_metrics=["accuracy"], work_dir=tmp_path)
    with pytest.raises(ConfigError, match="test_metrics=.name: metric."):
        Runner(torch.nn.Linear(4, 2), test_evaluator=[{"type": "DumpResults"}], work_dir=tmp_path)
