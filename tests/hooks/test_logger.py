"""LoggerHook / TextLoggerHook on real short runs: log.txt lines, metrics.jsonl, intervals,
ETA, evaluation lines, resume, and no host-device sync between log steps."""

from __future__ import annotations

import doctest
import importlib
import json
import re
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import HOOKS, ConfigError, Hook, HookError, Runner
from hookline.engine.message_hub import ScalarWindow
from hookline.hooks import LoggerHook, TextLoggerHook

from ..engine.toy import dataset, make_runner

TRAIN_LINE = re.compile(
    r"Epoch\(train\) \[(?P<epoch>\d+)\]\[\s*(?P<batch>\d+)/8\]  lr: (?P<lr>\S+)  eta: \d+:\d\d:\d\d"
    r"  time: \d+\.\d{4}  data_time: \d+\.\d{4}  loss: (?P<loss>\S+)$")


def train_lines(work_dir: Path, pattern: str = "(train)") -> list[str]:
    lines = (work_dir / "log.txt").read_text(encoding="utf-8").splitlines()
    return [line.split(" - INFO - ", 1)[1] for line in lines if pattern in line]


def records(work_dir: Path, mode: str | None = None) -> list[dict]:
    out = []
    for line in (work_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
        # strict JSON: NaN / Infinity tokens would fail here
        out.append(json.loads(line, parse_constant=lambda token: pytest.fail(f"{token} in JSON")))
    return [r for r in out if mode is None or r["mode"] == mode]


class LossRecorder(Hook):
    """Reads every loss (a sync per iteration: test instrumentation only)."""

    priority = "LOWEST"

    def __init__(self) -> None:
        self.losses: list[float] = []
        self.lrs: list[float] = []

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        self.losses.append(float(outputs["loss"].detach()))


# --------------------------------------------------------------------------- epoch-based run


@pytest.fixture(scope="module")
def epoch_run(tmp_path_factory) -> tuple[Path, LossRecorder]:
    work_dir = tmp_path_factory.mktemp("epoch_run")
    recorder = LossRecorder()
    runner = make_runner(work_dir, max_epochs=2, hooks=[recorder],
                         default_hooks={"logger": {"type": "LoggerHook", "interval": 3},
                                        "checkpoint": None})
    runner.train()
    return work_dir, recorder


def test_train_lines_follow_mmengine_layout(epoch_run) -> None:
    work_dir, _ = epoch_run
    lines = train_lines(work_dir)
    assert len(lines) == 6, lines  # batches 3, 6 and the epoch's last (8), twice
    positions = []
    for line in lines:
        match = TRAIN_LINE.match(line)
        assert match, line
        positions.append((int(match["epoch"]), int(match["batch"])))
    assert positions == [(1, 3), (1, 6), (1, 8), (2, 3), (2, 6), (2, 8)]
    # padded batch index keeps columns aligned: "[1][3/8]" has width 1 here, so no padding
    assert lines[0].startswith("Epoch(train) [1][3/8]  lr: 1.0000e-02  eta: ")


def test_jsonl_train_records(epoch_run) -> None:
    work_dir, recorder = epoch_run
    train = records(work_dir, "train")
    assert [r["iter"] for r in train] == [3, 6, 8, 11, 14, 16]
    assert [r["epoch"] for r in train] == [1, 1, 1, 2, 2, 2]
    for record in train:
        assert list(record)[:5] == ["mode", "epoch", "iter", "lr", "loss"]
        assert list(record)[-2:] == ["time", "data_time"]
        assert record["time"] >= record["data_time"] >= 0
    # the loss is the mean over the iterations since the previous log step
    losses = recorder.losses
    windows = [(0, 3), (3, 6), (6, 8), (8, 11), (11, 14), (14, 16)]
    for record, (start, stop) in zip(train, windows):
        expected = sum(losses[start:stop]) / (stop - start)
        assert record["loss"] == pytest.approx(expected, rel=1e-5)
    # StepLR(step_size=4, gamma=0.7) stepped per iteration: the lr used by iteration i
    for record in train:
        assert record["lr"] == pytest.approx(0.01 * 0.7 ** ((record["iter"] - 1) // 4))


def test_val_metrics_lines_and_records(epoch_run) -> None:
    work_dir, _ = epoch_run
    val_lines = train_lines(work_dir, "(val)")
    assert len(val_lines) == 2
    assert re.fullmatch(r"Epoch\(val\) \[1\]\[4/4\]  loss: \d\.\d{4}  accuracy: \d\.\d{4}", val_lines[0])
    assert val_lines[1].startswith("Epoch(val) [2][4/4]")
    val = records(work_dir, "val")
    assert [(r["epoch"], r["iter"]) for r in val] == [(1, 8), (2, 16)]
    assert all(0.0 <= r["accuracy"] <= 1.0 and r["loss"] > 0 for r in val)
    # in file order each validation follows the last training record of its epoch
    modes = [(r["mode"], r["iter"]) for r in records(work_dir)]
    assert modes.index(("val", 8)) == modes.index(("train", 8)) + 1
    assert modes[-1] == ("val", 16)


# --------------------------------------------------------------------------- other layouts


def test_iteration_run_and_standalone_test(tmp_path: Path) -> None:
    test_loader = DataLoader(dataset(24), batch_size=8)
    runner = make_runner(tmp_path, max_iters=12, test_dataloader=test_loader,
                         default_hooks={"logger": {"type": "TextLoggerHook", "interval": 5,
                                                   "by_epoch": False},
                                        "checkpoint": None})
    assert isinstance(runner.hooks.by_key()["logger"], TextLoggerHook)
    runner.train()
    lines = train_lines(tmp_path)
    assert [line.split("]")[0] for line in lines] == [
        "Iter(train) [ 5/12", "Iter(train) [10/12", "Iter(train) [12/12"]
    assert all("eta: " in line and "loss: " in line for line in lines)
    # validation every len(train_dataloader) = 8 iterations and at the end
    assert [r["iter"] for r in records(tmp_path, "val")] == [8, 12]
    # the whole iteration-based run is one epoch, in train and val records alike
    assert {r["epoch"] for r in records(tmp_path)} == {1}
    assert {r["epoch"] for r in records(tmp_path, "val")} == {1}
    assert train_lines(tmp_path, "(val)")[0].startswith("Iter(val) [4/4]  loss: ")
    runner.test()
    assert train_lines(tmp_path, "(test)")[-1].startswith("Iter(test) [3/3]  loss: ")
    test_record = records(tmp_path, "test")[-1]
    assert test_record["iter"] == 12 and "accuracy" in test_record


def test_ignore_last_and_other_outputs(tmp_path: Path) -> None:
    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(6, 3)

        def training_step(self, batch):
            x, y = batch
            loss = torch.nn.functional.cross_entropy(self.linear(x), y)
            return {"loss": loss, "acc_loss": loss * 2, "ratio": torch.tensor(float("inf")),
                    "count": 3}

    runner = Runner(Model(), optimizer={"type": "SGD", "lr": 0.1},
                    train_dataloader=DataLoader(dataset(), batch_size=8), max_epochs=1,
                    work_dir=tmp_path, default_hooks={
                        "logger": LoggerHook(interval=3, ignore_last=True), "checkpoint": None})
    runner.train()
    lines = train_lines(tmp_path)
    assert [line.split("]  ")[0] for line in lines] == ["Epoch(train) [1][3/8", "Epoch(train) [1][6/8"]
    # loss first, then other losses, then the rest
    tail = lines[0].split("  loss: ", 1)[1]
    assert re.fullmatch(r"\d\.\d{4}  acc_loss: \d\.\d{4}  (ratio: inf  count: 3\.0000|"
                        r"count: 3\.0000  ratio: inf)", tail), tail
    record = records(tmp_path)[0]
    assert record["ratio"] is None  # infinities are written as null: strict JSON
    assert record["acc_loss"] == pytest.approx(2 * record["loss"], rel=1e-5)


def test_no_sync_between_log_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20 iterations at interval 5: only the 4 log steps read device values, and they are read
    on the logger's writer thread, not the training thread."""
    reads = {"item": 0, "float": 0, "tolist": 0, "bool": 0, "mean": 0}
    threads: set[str] = set()
    for name, attr in (("item", "item"), ("float", "__float__"), ("tolist", "tolist"),
                       ("bool", "__bool__")):
        original = getattr(torch.Tensor, attr)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            if self.is_floating_point():  # not the DataLoader's int64 seed, read once a pass
                reads[_name] += 1
                threads.add(threading.current_thread().name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, attr, counted)
    original_mean = ScalarWindow.mean

    def counted_mean(self):
        reads["mean"] += 1
        return original_mean(self)

    monkeypatch.setattr(ScalarWindow, "mean", counted_mean)
    data = TensorDataset(torch.randn(40, 6), torch.randint(0, 3, (40,)))
    runner = Runner(torch.nn.Linear(6, 3), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_iters=20,
                    train_dataloader=DataLoader(data, batch_size=4), work_dir=tmp_path,
                    default_hooks={"logger": {"type": "LoggerHook", "interval": 5},
                                   "checkpoint": None})
    runner.train()
    assert len(records(tmp_path)) == 4
    # loss, time and data_time per log step; only the loss is a tensor
    assert reads["mean"] == 4 * 3
    assert reads["item"] + reads["float"] + reads["tolist"] + reads["bool"] <= 4, reads
    assert threads and all(name.startswith("hookline-log-writer") for name in threads), threads
    assert runner.message_hub.info["log_record"]["iter"] == 20  # published by the writer


# --------------------------------------------------------------------------- resume


class CrashAt(Hook):
    priority = "LOWEST"

    def __init__(self, iteration: int) -> None:
        self.iteration = iteration

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if runner.iter + 1 == self.iteration:
            raise RuntimeError("simulated crash")


def test_resume_continues_metrics_jsonl(tmp_path: Path) -> None:
    logger = {"type": "LoggerHook", "interval": 2}
    reference_dir = tmp_path / "reference"
    make_runner(reference_dir, max_epochs=2, default_hooks={"logger": logger}).train()

    work_dir = tmp_path / "crashed"
    with pytest.raises(HookError):
        make_runner(work_dir, max_epochs=2, hooks=[CrashAt(11)], checkpoint_every=3,
                    default_hooks={"logger": logger}).train()
    before = records(work_dir)
    assert before[-1] == {**before[-1], "mode": "train", "iter": 10}  # logged past the checkpoint
    make_runner(work_dir, max_epochs=2, checkpoint_every=3, resume="auto",
                default_hooks={"logger": logger}).train()
    log = (work_dir / "log.txt").read_text(encoding="utf-8")
    assert "metrics.jsonl: dropped 1 record(s) written after iteration 9" in log
    after = records(work_dir)
    assert after[:len(before) - 1] == before[:-1]  # records up to the checkpoint untouched
    first_new = after[len(before) - 1]
    assert (first_new["mode"], first_new["epoch"], first_new["iter"]) == ("train", 2, 10)
    expected = [(r["mode"], r["epoch"], r["iter"]) for r in records(reference_dir)]
    assert [(r["mode"], r["epoch"], r["iter"]) for r in after] == expected
    # exact resume: once the smoothing window holds only post-resume iterations, the
    # logged losses and metrics equal the uninterrupted run's
    reference = {(r["mode"], r["iter"]): r for r in records(reference_dir)}
    for record in after[len(before):]:
        match = reference[(record["mode"], record["iter"])]
        assert record["loss"] == pytest.approx(match["loss"], rel=1e-5)
        assert record.get("accuracy") == match.get("accuracy")


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize("kwargs, message", [
    ({"interval": 0}, "interval must be an int >= 1, got 0"),
    ({"interval": 2.5}, "interval must be an int >= 1"),
    ({"out_file": "logs/metrics.jsonl"}, "out_file must be a file name inside work_dir"),
])
def test_bad_arguments(kwargs, message) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        LoggerHook(**kwargs)
    with pytest.raises(ConfigError, match=re.escape(message)):
        HOOKS.build({"type": "TextLoggerHook", **kwargs})


def test_out_file_none_writes_no_jsonl(tmp_path: Path) -> None:
    make_runner(tmp_path, max_epochs=1,
                default_hooks={"logger": LoggerHook(interval=4, out_file=None),
                               "checkpoint": None}).train()
    assert not (tmp_path / "metrics.jsonl").exists()
    assert len(train_lines(tmp_path)) == 2


@pytest.mark.parametrize("name", ["hookline.hooks.logger", "hookline.hooks.iter_timer",
                                  "hookline.hooks.progress", "hookline.hooks.tensorboard",
                                  "hookline.hooks.profiler", "hookline.engine.hook_table"])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


class NumpyOutputs(torch.nn.Module):
    """A step that returns NumPy and Python numbers beside the loss (MMEngine's hub takes
    NumPy numbers; a Lightning user returns values instead of self.log)."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(6, 3)

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        return {"loss": loss, "np_half": np.float32(0.5), "np_count": np.int64(3),
                "np_array": np.array([2.0]), "flag": np.bool_(True)}

    def validation_step(self, batch):
        x, y = batch
        return {"loss": torch.nn.functional.cross_entropy(self(x), y), "py": 0.25,
                "np": np.float32(0.75)}


def test_numpy_and_python_numbers_in_step_outputs_are_logged(tmp_path):
    runner = Runner(NumpyOutputs(), optimizer={"type": "SGD", "lr": 0.1}, max_epochs=1,
                    train_dataloader=DataLoader(dataset(), batch_size=8),
                    val_dataloader=DataLoader(dataset(), batch_size=16), work_dir=tmp_path,
                    default_hooks={"logger": {"interval": 4}, "progress": None,
                                   "checkpoint": None})
    runner.train()
    train = records(tmp_path, "train")[0]
    assert (train["np_half"], train["np_count"], train["np_array"]) == (0.5, 3, 2.0)
    assert "flag" not in train  # a bool is no scalar to average
    val = records(tmp_path, "val")[0]
    assert (val["py"], val["np"]) == (0.25, 0.75)


def test_ignore_last_still_logs_an_epoch_no_longer_than_the_interval(tmp_path):
    """MMEngine's rule: with ignore_last, the last shorter group of an epoch is not logged,
    unless the epoch is no longer than the interval (then its end is its only line)."""
    runner = make_runner(tmp_path, max_epochs=2, default_hooks={
        "logger": {"type": "LoggerHook", "interval": 50, "ignore_last": True},
        "checkpoint": None})
    runner.train()
    assert [line.split("]")[1] for line in train_lines(tmp_path)] == ["[8/8"] * 2
    short = make_runner(tmp_path / "short", max_epochs=1, default_hooks={
        "logger": {"type": "LoggerHook", "interval": 3, "ignore_last": True},
        "checkpoint": None})
    short.train()
    assert [line.split("]")[1] for line in train_lines(tmp_path / "short")] == ["[3/8", "[6/8"]
