"""A notebook's habits: ``train()`` run again after a stop, on the same Runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner


def _data() -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


def make_runner(work_dir: Path, hooks: list[Hook], model: torch.nn.Module | None = None,
                **kwargs: Any) -> Runner:
    options: dict[str, Any] = dict(
        optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
        train_dataloader=DataLoader(_data(), batch_size=8, shuffle=True), max_epochs=2,
        param_scheduler={"type": "StepLR", "step_size": 10, "by_epoch": False},
        work_dir=str(work_dir), hooks=hooks, default_hooks={"logger": None})
    options.update(kwargs)
    return Runner(model or torch.nn.Sequential(torch.nn.Linear(8, 2)), **options)


class Record(Hook):
    """(epoch, batch_idx) -> the batch's first sample, for every iteration started."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, float]] = []

    def before_train_iter(self, runner: Any, batch_idx: int, data_batch: Any = None) -> None:
        self.seen.append((runner.epoch, batch_idx, float(data_batch[0][0, 0])))


class StopOnce(Hook):
    """Raises ``error`` once, in ``after_train_iter`` of iteration ``at`` (0-based)."""

    def __init__(self, at: int, error: type[BaseException]) -> None:
        self.at, self.error, self.done = at, error, False

    def after_train_iter(self, runner: Any, batch_idx: int, data_batch: Any = None,
                         outputs: Any = None) -> None:
        if not self.done and runner.iter == self.at:
            self.done = True
            raise self.error("stop")


@pytest.mark.parametrize("max_epochs", [2, None])
@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_train_again_continues_where_the_run_stopped(tmp_path: Path, max_epochs: int | None,
                                                     error: type[BaseException]) -> None:
    length = {"max_epochs": max_epochs} if max_epochs else {"max_epochs": None, "max_iters": 16}
    whole = Record()
    make_runner(tmp_path / "whole", [whole], **length).train()
    record = Record()
    runner = make_runner(tmp_path / "stopped", [StopOnce(4, error), record], **length)
    with pytest.raises(error):
        runner.train()
    runner.train()
    assert runner.iter == 16
    assert runner.epoch == (2 if max_epochs else 0)
    # the interrupted iteration's step ran (it stopped in after_train_iter): it counts and is
    # not run again; every iteration ran once, on the uninterrupted run's data
    assert record.seen == whole.seen
    # the scheduler (a LOW hook, after the failing one) skipped that iteration: 15 steps
    assert runner.optimizer is not None
    assert runner.optimizer.param_groups[0]["lr"] == pytest.approx(0.01)


class FailingStep(torch.nn.Module):
    """Raises in its 5th forward (a failure in the training step itself)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(8, 2)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == 5:
            raise ValueError("boom")
        return self.net(x)


def test_train_again_after_a_failing_step_continues_at_that_batch(tmp_path: Path) -> None:
    whole = Record()
    make_runner(tmp_path / "whole", [whole]).train()
    record = Record()
    runner = make_runner(tmp_path / "failed", [record], model=FailingStep())
    with pytest.raises(ValueError, match="boom"):
        runner.train()
    runner.train()
    assert runner.iter == 16
    assert record.seen[:4] + record.seen[5:] == whole.seen


def test_stopped_in_after_train_epoch_ends_that_epoch_again(tmp_path: Path) -> None:
    class StopAtEpochEnd(Hook):
        calls = 0

        def after_train_epoch(self, runner: Any) -> None:
            self.calls += 1
            if self.calls == 1:
                raise KeyboardInterrupt

    hook, record = StopAtEpochEnd(), Record()
    runner = make_runner(tmp_path, [hook, record])
    with pytest.raises(KeyboardInterrupt):
        runner.train()
    runner.train()
    assert (runner.epoch, runner.iter, hook.calls) == (2, 16, 3)
    assert len(record.seen) == 16
