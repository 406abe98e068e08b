"""TensorboardLoggerHook on real runs, its event files read back with TensorBoard's
EventAccumulator: tags, steps and values (the same smoothed values as metrics.jsonl)."""

from __future__ import annotations

import json
import math
import re
import threading
import time
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.data import DataLoader

from hookline import HOOKS, ConfigError, Hook, HookError
from hookline.engine.history_buffer import ScalarWindow
from hookline.hooks import TensorboardLoggerHook

from ..engine.toy import dataset, make_runner


def load_events(log_dir: Path) -> EventAccumulator:
    accumulator = EventAccumulator(str(log_dir), size_guidance={"scalars": 0, "histograms": 0})
    accumulator.Reload()
    return accumulator


def scalars(events: EventAccumulator, tag: str) -> list[tuple[int, float]]:
    return [(event.step, event.value) for event in events.Scalars(tag)]


def jsonl(work_dir: Path, mode: str) -> list[dict]:
    lines = (work_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["mode"] == mode]


class ParamSums(Hook):
    """The sum of the first layer's weight after every iteration (after the optimizer step)."""

    priority = "LOWEST"

    def __init__(self) -> None:
        self.sums: dict[int, float] = {}

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        self.sums[runner.iter + 1] = float(runner.model.body[0].weight.detach().sum())


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, ParamSums, TensorboardLoggerHook]:
    work_dir = tmp_path_factory.mktemp("tb")
    sums = ParamSums()
    hook = TensorboardLoggerHook(interval=3, histograms=True, histogram_interval=4)
    make_runner(work_dir, max_epochs=2, hooks=[hook, sums],
                default_hooks={"logger": {"type": "LoggerHook", "interval": 3},
                               "checkpoint": None}).train()
    return work_dir, sums, hook


def test_train_scalars_match_the_text_logger(run) -> None:
    work_dir, _, hook = run
    assert hook.writer is None  # closed at after_run
    events = load_events(work_dir / "tf_logs")
    tags = set(events.Tags()["scalars"])
    assert {"train/loss", "train/lr", "train/time", "train/data_time",
            "val/loss", "val/accuracy"} <= tags
    records = jsonl(work_dir, "train")
    loss = scalars(events, "train/loss")
    assert [step for step, _ in loss] == [r["iter"] for r in records] == [3, 6, 8, 11, 14, 16]
    for (_, value), record in zip(loss, records):
        assert value == pytest.approx(record["loss"], rel=1e-6)  # same smoothing, shared code
    for (_, value), record in zip(scalars(events, "train/lr"), records):
        assert value == pytest.approx(record["lr"], rel=1e-6)


def test_train_scalars_are_averaged_off_the_training_thread(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Averaging reads the loss tensors (a host-device sync on a GPU): the logger's writer thread
    does it, and every value is in the event file when the run ends, even without LoggerHook."""
    threads: list[str] = []
    original = ScalarWindow.mean

    def mean(self):
        threads.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(ScalarWindow, "mean", mean)
    make_runner(tmp_path, max_epochs=2, hooks=[TensorboardLoggerHook(interval=3)],
                default_hooks={"logger": None, "checkpoint": None}).train()
    assert threads and all(name.startswith("hookline-log-writer") for name in threads), threads
    steps = [step for step, _ in scalars(load_events(tmp_path / "tf_logs"), "train/loss")]
    assert steps == [3, 6, 8, 11, 14, 16]


def test_val_metrics_at_the_training_iteration(run) -> None:
    work_dir, _, _ = run
    events = load_events(work_dir / "tf_logs")
    val = jsonl(work_dir, "val")
    accuracy = scalars(events, "val/accuracy")
    assert [step for step, _ in accuracy] == [8, 16]
    assert [value for _, value in accuracy] == pytest.approx([r["accuracy"] for r in val])
    assert [v for _, v in scalars(events, "val/loss")] == pytest.approx([r["loss"] for r in val])


def test_val_metrics_by_epoch_as_mmengine_when_asked(tmp_path: Path) -> None:
    """MMEngine's LoggerHook(log_metric_by_epoch=True) steps val scalars by epoch."""
    hook = TensorboardLoggerHook(interval=3, log_metric_by_epoch=True)
    make_runner(tmp_path, max_epochs=2, hooks=[hook],
                default_hooks={"logger": None, "checkpoint": None}).train()
    events = load_events(tmp_path / "tf_logs")
    assert [step for step, _ in scalars(events, "val/accuracy")] == [1, 2]
    assert [step for step, _ in scalars(events, "train/loss")][-1] == 16  # still by iteration


def test_parameter_and_gradient_histograms(run) -> None:
    work_dir, sums, _ = run
    events = load_events(work_dir / "tf_logs")
    tags = set(events.Tags()["histograms"])
    names = ["body.0.weight", "body.0.bias", "body.3.weight", "body.3.bias"]
    assert tags == {f"{kind}/{name}" for kind in ("params", "grads") for name in names}
    params = events.Histograms("params/body.0.weight")
    assert [h.step for h in params] == [4, 8, 12, 16]
    for event in params:
        assert event.histogram_value.num == 16 * 6
        assert event.histogram_value.sum == pytest.approx(sums.sums[event.step], rel=1e-4, abs=1e-4)
    grads = events.Histograms("grads/body.3.bias")
    assert [h.step for h in grads] == [4, 8, 12, 16]
    for event in grads:
        # a cross-entropy gradient w.r.t. the output bias sums to zero over the classes
        assert event.histogram_value.num == 3
        assert event.histogram_value.sum == pytest.approx(0.0, abs=1e-5)
        assert event.histogram_value.sum_squares > 0


def test_iteration_run_custom_log_dir_and_standalone_test(tmp_path: Path) -> None:
    log_dir = tmp_path / "elsewhere"
    runner = make_runner(tmp_path / "work", max_iters=10,
                         test_dataloader=DataLoader(dataset(24), batch_size=8),
                         hooks=[{"type": "TensorboardLoggerHook", "interval": 4, "by_epoch": False,
                                 "log_dir": str(log_dir)}],
                         default_hooks={"checkpoint": None, "logger": None})
    runner.train()
    runner.test()
    events = load_events(log_dir)
    assert [s for s, _ in scalars(events, "train/loss")] == [4, 8, 10]
    assert [s for s, _ in scalars(events, "val/accuracy")] == [8, 10]
    assert [s for s, _ in scalars(events, "test/accuracy")] == [10]
    assert not (tmp_path / "work" / "tf_logs").exists()


class CrashAt(Hook):
    priority = "LOWEST"

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if runner.iter + 1 == 11:
            raise RuntimeError("simulated crash")


def test_resume_purges_steps_that_run_again(tmp_path: Path) -> None:
    tb = {"type": "TensorboardLoggerHook", "interval": 2}
    hook = HOOKS.build(tb)
    with pytest.raises(HookError):
        make_runner(tmp_path, max_epochs=2, checkpoint_every=3, hooks=[hook, CrashAt()],
                    default_hooks={"logger": None}).train()
    assert hook.writer is None  # closed by on_exception
    before = scalars(load_events(tmp_path / "tf_logs"), "train/loss")
    assert [s for s, _ in before] == [2, 4, 6, 8, 10]
    # event files are read in name order: <seconds>.<host>.<pid>.<counter>; in one process
    # within one second the counter decides, and "10" sorts before "9". A resumed run is a
    # later process in real use; here, a later second keeps the files in order
    time.sleep(max(0.0, math.ceil(time.time()) - time.time()) + 0.01)
    make_runner(tmp_path, max_epochs=2, checkpoint_every=3, hooks=[tb], resume="auto",
                default_hooks={"logger": None}).train()  # resumes at iteration 9
    after = scalars(load_events(tmp_path / "tf_logs"), "train/loss")
    assert [s for s, _ in after] == [2, 4, 6, 8, 10, 12, 14, 16]
    assert after[:4] == before[:4]
    assert after[4] != before[4]  # step 10 comes from the resumed run only


@pytest.mark.parametrize("kwargs, message", [
    ({"interval": 0}, "TensorboardLoggerHook interval must be an int >= 1, got 0"),
    ({"histogram_interval": -1}, "histogram_interval must be an int >= 1"),
    ({"log_dir": 3}, "log_dir must be a path or None"),
])
def test_bad_arguments(kwargs, message) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        TensorboardLoggerHook(**kwargs)


def test_histograms_are_off_by_default_and_cost_no_tensor_hooks(tmp_path: Path) -> None:
    hook = TensorboardLoggerHook(interval=4)
    runner = make_runner(tmp_path, max_epochs=1, hooks=[hook],
                         default_hooks={"checkpoint": None, "logger": None})
    registered = []
    original = torch.Tensor.register_post_accumulate_grad_hook

    def spy(self, fn):
        registered.append(fn)
        return original(self, fn)

    torch.Tensor.register_post_accumulate_grad_hook = spy
    try:
        runner.train()
    finally:
        torch.Tensor.register_post_accumulate_grad_hook = original
    assert registered == []
    assert load_events(tmp_path / "tf_logs").Tags()["histograms"] == []
