"""What validation and test passes report: values that are not one number, colliding keys, an
empty pass, a metric that raises, MMEngine's ``process(data_samples=...)`` call."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

from hookline import ConfigError, Hook, Runner
from hookline.engine.evaluator import Evaluator
from hookline.engine.metric_values import is_scalar, plain_value
from hookline.hooks.best_checkpoint import BestCheckpoint


def data(n: int = 32) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


class Seen(Hook):
    """Records the metrics each validation / test hands its hooks."""

    def __init__(self) -> None:
        self.val: list[dict] = []
        self.test: list[dict] = []

    def after_val_epoch(self, runner, metrics=None):
        self.val.append(dict(metrics or {}))

    def after_test_epoch(self, runner, metrics=None):
        self.test.append(dict(metrics or {}))


def runner(tmp_path, metrics, *, train=False, hooks=(), val=None, checkpoint=None, **kwargs):
    torch.manual_seed(0)
    return Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(data(), batch_size=8) if train else None,
                  val_dataloader=val if val is not None else DataLoader(data(), batch_size=16),
                  test_dataloader=DataLoader(data(), batch_size=16),
                  metrics=metrics, max_epochs=2 if train else None, work_dir=tmp_path,
                  hooks=list(hooks), default_hooks={"progress": None, "checkpoint": checkpoint},
                  **kwargs)


def records(tmp_path, mode: str) -> list[dict]:
    lines = (tmp_path / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["mode"] == mode]


# -- 4. values that are not one number pass through, as MMEngine passes them -----------------------
def classwise(preds, targets):
    hits = (preds.argmax(1) == targets).float()
    per_class = torch.stack([hits[targets == c].mean() for c in (0, 1)])
    return {"cw/per_class": per_class, "cw/nested": {"a": torch.tensor(1.0)}, "cw/name": "hello",
            "cw/n": len(targets), "cw/none": None, "cw/np": np.float32(0.25)}


def test_values_that_are_not_one_number_reach_the_hooks_and_the_log_and_training_goes_on(tmp_path):
    seen = Seen()
    run = runner(tmp_path, {"accuracy": "accuracy", "cw": classwise}, train=True, hooks=[seen],
                 checkpoint={"type": "CheckpointHook", "save_best": "accuracy"})
    run.train()
    metrics = seen.val[-1]
    assert isinstance(metrics["cw/per_class"], list) and len(metrics["cw/per_class"]) == 2
    assert metrics["cw/nested"] == {"a": 1.0} and metrics["cw/name"] == "hello"
    assert metrics["cw/n"] == 32 and type(metrics["cw/n"]) is int  # an int stays an int
    assert metrics["cw/np"] == 0.25 and "cw/none" not in metrics  # None: left out
    # every epoch's checkpoint is written, the best one too
    assert {p.name for p in tmp_path.glob("*.pth")} >= {"epoch_1.pth", "epoch_2.pth"}
    assert list(tmp_path.glob("best_accuracy_epoch_*.pth"))
    hub = run.message_hub
    # scalars are the hub's scalars; the rest its run information, as MMEngine's RuntimeInfoHook
    assert hub.get_scalar("val/cw/n").current() == 32
    assert "val/cw/per_class" not in hub.log_scalars
    assert hub.get_info("val/cw/per_class") == metrics["cw/per_class"]
    assert hub.get_info("val/cw/name") == "hello"
    assert set(hub.info["val_metrics"]) == {"loss", "accuracy", "cw/n", "cw/np"}  # numbers only
    # the log line shows them; metrics.jsonl holds them as JSON
    log = (tmp_path / "log.txt").read_text(encoding="utf-8")
    assert "cw/name: hello" in log and "cw/nested: {'a': 1.0}" in log and "cw/n: 32 " in log
    last = records(tmp_path, "val")[-1]
    assert last["cw/per_class"] == metrics["cw/per_class"] and last["cw/n"] == 32


def test_tensorboard_plots_only_the_numbers(tmp_path):
    run = runner(tmp_path, {"cw": classwise}, hooks=[{"type": "TensorboardLoggerHook"}])
    run.val()
    [events] = [p for p in tmp_path.rglob("events.out.tfevents*")]
    accumulator = EventAccumulator(str(events.parent))
    accumulator.Reload()
    assert set(accumulator.Tags()["scalars"]) == {"val/loss", "val/cw/n", "val/cw/np"}


def test_save_best_on_a_value_that_is_not_a_number_names_it(tmp_path):
    run = runner(tmp_path, {"cw": classwise}, train=True,
                 checkpoint={"type": "CheckpointHook", "save_best": "cw/per_class", "rule": "greater"})
    with pytest.raises(Exception) as info:
        run.train()
    message = str(info.value)
    assert "save_best='cw/per_class'" in message and "not one number" in message
    assert "list" in message and "cw/n" in message  # what it is, and what could be tracked


def test_plain_value_and_is_scalar():
    assert plain_value(torch.tensor([[1, 2], [3, 4]])) == [[1, 2], [3, 4]]
    assert plain_value(torch.tensor(7)) == 7 and type(plain_value(torch.tensor(7))) is int
    assert plain_value(np.array([0.5])) == 0.5 and plain_value(np.array([1, 2])) == [1, 2]
    assert plain_value((torch.tensor(1.5), "x")) == [1.5, "x"]
    assert [is_scalar(v) for v in (1, 1.5, True, "1", [1], None)] == [True, True, False, False,
                                                                    False, False]


# -- 2. one key, one source -----------------------------------------------------------------------
def test_two_metrics_reporting_the_same_key_is_an_error_naming_both(tmp_path):
    run = runner(tmp_path, {"cls": lambda p, t: {"precision": 0.11, "recall": 0.2},
                            "det": lambda p, t: {"precision": 0.99}})
    with pytest.raises(ConfigError) as info:
        run.val()
    message = str(info.value)
    assert "metrics 'cls' and 'det' both report 'precision'" in message
    assert "'det/precision'" in message


def test_a_metric_named_loss_does_not_overwrite_the_validation_loss(tmp_path):
    run = runner(tmp_path, {"loss": lambda p, t: 123.0})
    with pytest.raises(ConfigError) as info:
        run.val()
    message = str(info.value)
    assert "metric 'loss' reports 'loss'" in message and "averaged" in message


def test_collisions_on_the_data_samples_path_too():
    evaluator = Evaluator({"a": lambda s: {"n": len(s)}, "b": lambda s: {"n": 0}})
    evaluator.process([1, 2])
    with pytest.raises(ConfigError, match="metrics 'a' and 'b' both report 'n'"):
        evaluator.compute()


# -- 7. an evaluation that processes nothing --------------------------------------------------------
class Nothing(IterableDataset):
    def __iter__(self):
        return iter(())


class NoSamples(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def validation_step(self, batch):
        return []  # a detector that keeps no sample of this batch


def warnings_in_log(tmp_path, fragment: str) -> list[str]:
    lines = (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines()
    return [line.split(" - WARNING - ", 1)[1] for line in lines
            if " - WARNING - " in line and fragment in line]


def test_an_empty_pass_warns_once_naming_the_loop_and_calls_no_metric(tmp_path):
    called = []
    seen = Seen()
    run = runner(tmp_path, {"acc": lambda p, t: called.append(1) or 1.0}, hooks=[seen],
                 val=DataLoader(Nothing(), batch_size=4))
    assert run.val() == {} and run.val() == {}
    warnings = warnings_in_log(tmp_path, "processed no data")
    assert len(warnings) == 1 and warnings[0].startswith("ValLoop: the val pass")
    assert "acc" in warnings[0] and "save_best" in warnings[0]
    assert called == [] and seen.val == [{}, {}]


def test_steps_that_return_no_samples_are_an_empty_pass_too(tmp_path):
    run = Runner(NoSamples(), val_dataloader=DataLoader(data(), batch_size=16),
                 metrics={"acc": lambda samples: {"acc": 1 / len(samples)}}, work_dir=tmp_path,
                 default_hooks={"progress": None})
    assert run.val() == {}  # the metric is not called on no samples (no ZeroDivisionError)
    assert warnings_in_log(tmp_path, "processed no data")


def test_save_best_says_when_a_validation_reported_nothing(tmp_path):
    best = BestCheckpoint("accuracy")
    run = runner(tmp_path, {"accuracy": "accuracy"})
    assert best.check(run, {}) is False and best.check(run, {}) is False
    run.close()
    said = warnings_in_log(tmp_path, "reported no metrics")
    assert len(said) == 1 and "save_best='accuracy'" in said[0]


# -- a metric that raises, on either path ----------------------------------------------------------
def test_a_metric_that_raises_is_named_on_the_data_samples_path():
    def bad(samples):
        raise KeyError("gt_label")

    evaluator = Evaluator({"my_metric": bad})
    evaluator.process([{"pred": 1}, {"pred": 0}])
    with pytest.raises(RuntimeError) as info:
        evaluator.compute()
    assert "metric 'my_metric' failed on 2 data samples" in str(info.value)
    assert "KeyError" in str(info.value) and isinstance(info.value.__cause__, KeyError)


# -- 11. MMEngine's keywords ---------------------------------------------------------------------
def test_process_takes_mmengines_keywords():
    evaluator = Evaluator({"acc": lambda s: {"acc": sum(x["ok"] for x in s) / len(s)}})
    evaluator.process(data_samples=[{"ok": 1}, {"ok": 0}], data_batch=None)
    evaluator.process([{"ok": 1}, {"ok": 1}], None)
    assert evaluator.evaluate(4) == {"acc": 0.75}
    with pytest.raises(TypeError, match="both outputs and data_samples"):
        evaluator.process([{"ok": 1}], data_samples=[{"ok": 1}])
    with pytest.raises(TypeError, match="needs the batch's outputs"):
        evaluator.process()
