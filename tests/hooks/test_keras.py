"""KerasCallback: Keras' callback methods at the matching Runner stages, on real runs."""

from __future__ import annotations

import copy
import doctest
import json
import pickle

import pytest
import torch
from torch.utils.data import DataLoader

import hookline.hooks.keras
from hookline import HOOKS, HookError
from hookline.hooks import KerasCallback
from hookline.hooks.keras_values import Logs

from ._toy import (  # one_thread is an autouse fixture
    Explode,
    assert_equal_states,
    dataset,
    make_runner,
    one_thread,  # noqa: F401
    snapshot,
)


class Recorder(KerasCallback):
    """Overrides every Keras method and records (method, argument, a copy of logs)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def _add(self, name, arg=None, logs=None):
        self.calls.append((name, arg, dict(logs) if logs is not None else None))

    def on_train_begin(self, logs=None):
        self._add("train_begin", None, logs)

    def on_train_end(self, logs=None):
        self._add("train_end", None, logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._add("epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._add("epoch_end", epoch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._add("batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._add("batch_end", batch, logs)

    def on_test_begin(self, logs=None):
        self._add("test_begin", None, logs)

    def on_test_end(self, logs=None):
        self._add("test_end", None, logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._add("test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        self._add("test_batch_end", batch, logs)


def test_docstring_examples():
    assert doctest.testmod(hookline.hooks.keras).failed == 0


def test_methods_are_called_in_keras_order_with_keras_logs(tmp_path):
    callback = Recorder()
    runner = make_runner(tmp_path, hooks=[callback], max_epochs=2)
    losses: list[float] = []
    runner.on("after_train_iter", lambda r, outputs, **kw: losses.append(outputs["loss"].item()))
    val_metrics: list[dict] = []
    runner.on("after_val_epoch", lambda r, metrics: val_metrics.append(dict(metrics)))
    runner.train()

    names = [c[0] for c in callback.calls]
    val_part = ["test_begin"] + ["test_batch_begin", "test_batch_end"] * 3 + ["test_end"]
    epoch_part = ["epoch_begin"] + ["batch_begin", "batch_end"] * 6 + val_part + ["epoch_end"]
    assert names == ["train_begin"] + epoch_part * 2 + ["train_end"]

    epoch_ends = [c for c in callback.calls if c[0] == "epoch_end"]
    for epoch, (_, index, logs) in enumerate(epoch_ends):
        assert index == epoch
        assert logs["loss"] == pytest.approx(sum(losses[6 * epoch:6 * epoch + 6]) / 6, rel=1e-6)
        assert logs["val_loss"] == val_metrics[epoch]["loss"]
        assert logs["val_accuracy"] == val_metrics[epoch]["accuracy"]
    batch_ends = [c for c in callback.calls if c[0] == "batch_end"]
    assert [c[1] for c in batch_ends] == list(range(6)) * 2
    assert batch_ends[2][2]["loss"] == pytest.approx(sum(losses[:3]) / 3, rel=1e-6)  # running mean
    assert batch_ends[6][2]["loss"] == pytest.approx(losses[6], rel=1e-6)  # restarts each epoch
    test_ends = [c for c in callback.calls if c[0] == "test_end"]
    assert [c[2] for c in test_ends] == val_metrics
    assert callback.calls[-1][2] == epoch_ends[-1][2]  # on_train_end gets the last epoch's logs
    assert callback.calls[0][2] == {} and callback.calls[1] == ("epoch_begin", 0, {})
    assert callback.runner is runner and callback.model is runner.model
    assert callback.params == {"epochs": 2, "steps": 6}


def test_only_the_stages_of_overridden_methods_are_dispatched(tmp_path):
    class BatchCounter(KerasCallback):
        count = 0

        def on_train_batch_begin(self, batch, logs=None):
            self.count += 1

    callback = BatchCounter()
    assert callback.triggered_stages() == ["before_train_iter"]
    runner = make_runner(tmp_path, hooks=[callback], max_epochs=1)
    assert [s for s, methods in runner.hooks.stages.items()
            if any(m.__self__ is callback for m in methods)] == ["before_train_iter"]
    runner.train()
    assert callback.count == 6
    assert KerasCallback().triggered_stages() == []
    assert "KerasCallback" in HOOKS


def test_batch_logs_are_converted_only_when_read(tmp_path):
    kept: list[Logs] = []

    class Keep(KerasCallback):
        def on_train_batch_end(self, batch, logs=None):
            kept.append(logs)

    runner = make_runner(tmp_path, hooks=[Keep()], max_epochs=1)
    losses: list[float] = []
    runner.on("after_train_iter", lambda r, outputs, **kw: losses.append(outputs["loss"].item()))
    runner.train()
    # the stored value is private: what it shows (a tensor until read: no sync) has no public view
    assert not isinstance(dict.__getitem__(kept[0], "loss"), float)  # the raw storage
    value = kept[0]["loss"]
    assert isinstance(value, float) and dict.__getitem__(kept[0], "loss") == value
    assert value == pytest.approx(losses[0], rel=1e-6)
    kept[1]["lr"] = 0.1  # logs are a mutable mapping, as in Keras
    assert dict(kept[1]).keys() == {"loss", "lr"}


def test_logs_are_a_dict_read_once_on_first_use():
    """Keras's logs are dicts: copy(), |, json.dumps, pickle and deepcopy work (plain dicts out),
    and the device values are converted all at once, on the first read, not before."""
    logs = Logs({"loss": torch.tensor(0.5), "acc": 1.0})
    assert isinstance(logs, dict) and len(logs) == 2 and "loss" in logs
    assert isinstance(dict.__getitem__(logs, "loss"), torch.Tensor)  # nothing read yet
    assert json.loads(json.dumps(logs)) == {"loss": 0.5, "acc": 1.0}
    assert dict.__getitem__(logs, "loss") == 0.5  # read now, in place
    for made in (logs.copy(), logs | {}, {} | logs, copy.deepcopy(logs),
                 pickle.loads(pickle.dumps(logs)), {**logs}, dict(logs)):
        assert type(made) is dict and made == {"loss": 0.5, "acc": 1.0}
    assert logs == {"loss": 0.5, "acc": 1.0} and repr(logs) == "{'loss': 0.5, 'acc': 1.0}"
    logs["lr"] = torch.tensor(0.25)
    assert logs.get("lr") == 0.25 and list(logs.values()) == [0.5, 1.0, 0.25]


def test_stop_training_from_epoch_end_and_from_a_batch(tmp_path):
    class StopAfterEpoch1(KerasCallback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                self.runner.stop_training = True

    runner = make_runner(tmp_path / "a", hooks=[StopAfterEpoch1()], max_epochs=5)
    runner.train()
    assert runner.epoch == 2

    class StopAtBatch2(KerasCallback):
        def on_batch_end(self, batch, logs=None):  # the Keras 2 name
            if batch == 2:
                self.runner.stop_training = True

    assert StopAtBatch2().triggered_stages() == ["after_train_iter", "after_train_epoch"]
    runner = make_runner(tmp_path / "b", hooks=[StopAtBatch2()], max_epochs=5)
    runner.train()
    assert runner.iter == 3


def test_epochs_without_validation_and_iteration_based_runs(tmp_path):
    callback = Recorder()
    runner = make_runner(tmp_path / "a", hooks=[callback], max_epochs=3, val_interval=2)
    runner.train()
    ends = [(c[1], sorted(c[2])) for c in callback.calls if c[0] == "epoch_end"]
    assert ends == [(0, ["loss"]), (1, ["loss", "val_accuracy", "val_loss"]),
                    (2, ["loss", "val_accuracy", "val_loss"])]

    callback = Recorder()
    runner = make_runner(tmp_path / "b", hooks=[callback], max_iters=10, val_interval=5)
    runner.train()
    epochs = [(c[0], c[1]) for c in callback.calls if c[0].startswith("epoch")]
    assert epochs == [("epoch_begin", 0), ("epoch_end", 0)]
    assert [c[0] for c in callback.calls].count("test_end") == 2
    assert sorted(callback.calls[-2][2]) == ["loss", "val_accuracy", "val_loss"]
    assert callback.params == {"epochs": None, "steps": 10}


def test_standalone_val_and_test_call_the_test_methods(tmp_path):
    callback = Recorder()
    runner = make_runner(tmp_path, hooks=[callback], test_dataloader=make_runner(
        tmp_path).val_dataloader)
    metrics = runner.val()
    assert [c[0] for c in callback.calls] == (["test_begin"] + ["test_batch_begin",
                                              "test_batch_end"] * 3 + ["test_end"])
    assert callback.calls[-1][2] == metrics
    assert callback.calls[2][2]["loss"] > 0  # on_test_batch_end: running mean of the step loss
    callback.calls.clear()
    assert runner.test() == metrics
    assert callback.calls[-1] == ("test_end", None, metrics)


def test_resume_in_the_middle_of_an_epoch_keeps_the_epoch_means(tmp_path):
    class EpochLogs(KerasCallback):
        def __init__(self):
            self.logs: dict[int, dict] = {}

        def on_epoch_end(self, epoch, logs=None):
            self.logs[epoch] = dict(logs)

    whole_cb = EpochLogs()
    whole = make_runner(tmp_path / "whole", hooks=[whole_cb])
    whole.train()
    first = make_runner(tmp_path / "run", hooks=[EpochLogs(), Explode(9)])  # mid epoch 2
    with pytest.raises(HookError, match="stop here"):
        first.train()
    resumed_cb = EpochLogs()
    resumed = make_runner(tmp_path / "run", hooks=[resumed_cb],
                          resume=tmp_path / "run" / "iter_9.pth")
    resumed.train()
    assert sorted(resumed_cb.logs) == [1, 2]
    assert resumed_cb.logs[1] == whole_cb.logs[1] and resumed_cb.logs[2] == whole_cb.logs[2]
    assert_equal_states(snapshot(resumed.model), snapshot(whole.model))


def test_batch_only_callbacks_get_the_running_mean_of_their_own_epoch(tmp_path):
    """Issue 14: a callback with only on_train_batch_end kept one running mean over the whole
    run, so from epoch 2 on ``logs["loss"]`` was not the epoch's mean."""
    last_of_epoch: list[float] = []

    class LastBatch(KerasCallback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 5:
                last_of_epoch.append(logs["loss"])

    runner = make_runner(tmp_path, hooks=[LastBatch()], max_epochs=2)
    losses: list[float] = []
    runner.on("after_train_iter", lambda r, outputs, **kw: losses.append(outputs["loss"].item()))
    runner.train()
    assert last_of_epoch == pytest.approx([sum(losses[:6]) / 6, sum(losses[6:]) / 6], rel=1e-6)


def test_epoch_and_test_batch_means_are_weighted_by_batch_size_as_keras_weights_them(tmp_path):
    """44 samples in batches of 8 (the last one 4): a plain mean over batches would count the
    short batch as much as a full one (tests/integrations compares with keras.Model.fit)."""
    seen: dict[str, list[float]] = {"epoch": [], "test_batch": []}

    class Means(KerasCallback):
        def on_epoch_end(self, epoch, logs=None):
            seen["epoch"].append(logs["loss"])

        def on_test_batch_end(self, batch, logs=None):
            seen["test_batch"].append(logs["loss"])

    runner = make_runner(tmp_path, hooks=[Means()], max_epochs=1, shuffle=False,
                         data=dataset(44))
    runner.val_loop.dataloader = DataLoader(dataset(20), batch_size=16)  # 16, then 4
    steps: list[tuple[float, int]] = []
    runner.on("after_train_iter", lambda r, data_batch, outputs, **kw: steps.append(
        (outputs["loss"].item(), len(data_batch[1]))))
    tests: list[tuple[float, int]] = []
    runner.on("after_val_iter", lambda r, data_batch, outputs, **kw: tests.append(
        (outputs["loss"].item(), len(data_batch[1]))))
    runner.train()
    assert [n for _, n in steps] == [8] * 5 + [4]
    weighted = sum(loss * n for loss, n in steps) / 44
    assert seen["epoch"] == [pytest.approx(weighted, rel=1e-6)]
    assert seen["test_batch"][-1] == pytest.approx(sum(v * n for v, n in tests) / 20, rel=1e-6)
