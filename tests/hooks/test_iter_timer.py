"""IterTimerHook on real runs: ``time`` and ``data_time`` per iteration in the message hub."""

from __future__ import annotations

import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from hookline import HOOKS, Hook, Runner
from hookline.engine.message_hub import MessageHub
from hookline.hooks import IterTimerHook

DATA_SLEEP = 0.004  # seconds per sample: a batch of 2 waits at least 8 ms
STEP_SLEEP = 0.006


class SlowData(Dataset):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int):
        time.sleep(DATA_SLEEP)
        return torch.full((3,), float(index)), index % 2


class SlowModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(STEP_SLEEP)
        return self.linear(x)


class Reader(Hook):
    """Reads the timer's latest values right after it wrote them."""

    priority = "LOW"

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[float, float]]] = {"train": [], "val": []}

    def _after_iter(self, runner, batch_idx, data_batch=None, outputs=None, mode="train") -> None:
        hub = runner.message_hub
        self.seen[mode].append((hub.latest(f"{mode}/data_time"), hub.latest(f"{mode}/time")))


def test_time_and_data_time_per_iteration(tmp_path: Path) -> None:
    reader = Reader()
    runner = Runner(SlowModel(), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2,
                    train_dataloader=DataLoader(SlowData(), batch_size=2),
                    val_dataloader=DataLoader(SlowData(), batch_size=4),
                    work_dir=tmp_path, hooks=[reader],
                    default_hooks={"logger": None, "checkpoint": None})
    assert isinstance(runner.hooks.by_key()["timer"], IterTimerHook)
    runner.train()
    assert len(reader.seen["train"]) == 8 and len(reader.seen["val"]) == 4
    for data_time, iter_time in reader.seen["train"]:
        # lower bounds from the sleeps: loading 2 samples, then the forward pass
        assert data_time >= 2 * DATA_SLEEP
        assert iter_time >= data_time + STEP_SLEEP
    for data_time, iter_time in reader.seen["val"]:
        assert data_time >= 4 * DATA_SLEEP and iter_time >= data_time + STEP_SLEEP
    assert {"train/time", "train/data_time", "val/time", "val/data_time"} <= set(
        runner.message_hub.keys())


def test_values_are_host_floats_and_the_timer_keeps_no_state() -> None:
    hook = HOOKS.build({"type": "IterTimerHook"})
    assert hook.triggered_stages() == [
        "before_train", "before_train_epoch", "before_train_iter", "after_train_iter", "before_val_epoch",
        "before_val_iter", "after_val_iter", "before_test_epoch", "before_test_iter",
        "after_test_iter"]
    assert hook.state_dict() == {}
    # MMEngine's state names, which its subclasses (mmagic's IterTimerHook) read and write
    assert (hook.start_iter, hook.time_sec_tot, hook.time_sec_test_val) == (0, 0.0, 0.0)
    assert isinstance(hook.t, float)


def test_recorded_values_are_plain_floats(tmp_path: Path, monkeypatch) -> None:
    updates: list[tuple[str, type]] = []
    original = MessageHub.update

    def update(self, key, value):
        updates.append((key, type(value)))
        original(self, key, value)

    monkeypatch.setattr(MessageHub, "update", update)
    runner = Runner(torch.nn.Linear(3, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_iters=3,
                    train_dataloader=DataLoader(SlowData(), batch_size=4),
                    work_dir=tmp_path, default_hooks={"logger": None, "checkpoint": None})
    runner.train()
    timings = [(key, kind) for key, kind in updates if key.endswith("time")]
    # host wall-clock floats: recording them never touches the device
    assert timings == [("train/data_time", float), ("train/time", float)] * 3
