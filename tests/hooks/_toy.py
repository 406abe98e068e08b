"""A small, deterministic training setup with BatchNorm, shared by the tests of
EMAHook, EarlyStoppingHook, CheckInvalidLossHook, EmptyCacheHook, SyncBuffersHook,
ClosureHook and KerasCallback."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models train several times faster on one thread (no OpenMP spinning on a busy
    machine); import this fixture into a test module to apply it there."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class BNNet(torch.nn.Module):
    """Linear -> BatchNorm -> ReLU -> Dropout -> Linear: weights, buffers and RNG all matter."""

    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(6, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
            torch.nn.Dropout(0.1), torch.nn.Linear(16, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def dataset(n: int = 48, seed: int = 7) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=generator)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    return TensorDataset(x, y)


def make_runner(work_dir, *, hooks=(), max_epochs: int | None = None,
                max_iters: int | None = None, checkpoint: dict | None = None,
                shuffle: bool = True, val: bool = True, lr: float = 0.05,
                model: torch.nn.Module | None = None, data: TensorDataset | None = None,
                loss_fn=None, **kwargs) -> Runner:
    """A Runner on :func:`dataset` (6 batches of 8 per epoch); 3 epochs unless told."""
    torch.manual_seed(0)
    model = BNNet() if model is None else model
    if max_epochs is None and max_iters is None:
        max_epochs = 3
    data = dataset() if data is None else data
    default_hooks = {"logger": None, "progress": None, "checkpoint": checkpoint,
                     **kwargs.pop("default_hooks", {})}
    return Runner(
        model,
        optimizer={"type": "SGD", "lr": lr, "momentum": 0.9},
        loss_fn=torch.nn.CrossEntropyLoss() if loss_fn is None else loss_fn,
        train_dataloader=DataLoader(data, batch_size=8, shuffle=shuffle),
        val_dataloader=DataLoader(dataset(), batch_size=16) if val else None,
        metrics=kwargs.pop("metrics", {"accuracy": "accuracy"}),
        max_epochs=max_epochs,
        max_iters=max_iters,
        work_dir=work_dir,
        hooks=hooks,
        default_hooks=default_hooks,
        **kwargs,
    )


EVERY_ITER = {"type": "CheckpointHook", "interval": 1, "by_epoch": False}


def snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def assert_equal_states(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


class Explode(Hook):
    """After iteration ``at_iter`` (1-based): saves ``iter_<at_iter>.pth`` (as CheckpointHook
    would at that point) and raises, so a fresh Runner can resume from the middle of a run."""

    priority = "LOWEST"

    def __init__(self, at_iter: int) -> None:
        self.at_iter = at_iter

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if runner.iter + 1 == self.at_iter:
            runner.save_checkpoint(f"iter_{self.at_iter}.pth")
            raise RuntimeError("stop here")
