"""The same tiny classifier trained twice: by ``keras.Model.fit`` (torch backend) and by a hookline
Runner (a torch ``Linear`` with the Keras model's initial weights), on the same data in the same
order with the same plain SGD, so both runs follow the same trajectory to float rounding.

Callbacks are given to both as a factory (each run gets fresh instances).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner

keras = pytest.importorskip("keras")

BATCH = 24  # 64 samples: batches of 24, 24 and 16 (the last, shorter one is weighted by its size)


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def data(seed: int = 0, noise: float = 0.0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = (x[:, 0] + 0.5 * x[:, 1] + noise * rng.normal(size=64) > 0).astype("int64")
    xv = rng.normal(size=(30, 4)).astype("float32")
    yv = (xv[:, 0] + noise * rng.normal(size=30) > 0).astype("int64")
    return x, y, xv, yv


def initial_weights(seed: int = 0) -> list[np.ndarray]:
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    return [w.copy() for w in model.get_weights()]


class Run:
    """What one training run left: callbacks, History, final weights and LR, printed text."""

    def __init__(self, callbacks: list[Any], weights: list[np.ndarray], lr: float, stdout: str,
                 batches: int, runner: Runner | None = None) -> None:
        self.callbacks, self.weights, self.lr, self.stdout = callbacks, weights, lr, stdout
        self.batches = batches
        self.runner = runner

    def of(self, cls: type) -> Any:
        return next(c for c in self.callbacks if isinstance(c, cls))


class _Counter:
    """Counts the training batches a run executes (a Keras-style callback both runs accept)."""

    def __init__(self) -> None:
        self.batches = 0

    def cb(self) -> Any:
        counter = self

        class CountBatches(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                counter.batches += 1

        return CountBatches()


def fit_keras(make_callbacks: Callable[[], list[Any]], *, epochs: int = 6, lr: float = 0.5,
              seed: int = 0, noise: float = 0.0, validation: bool = True,
              verbose: int = 0, validation_freq: int = 1) -> Run:
    x, y, xv, yv = data(seed, noise)
    kernel, bias = initial_weights(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.set_weights([kernel, bias])
    model.compile(optimizer=keras.optimizers.SGD(lr),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    callbacks = make_callbacks()
    counter = _Counter()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        model.fit(x, y, batch_size=BATCH, epochs=epochs, shuffle=False, verbose=verbose,
                  validation_data=(xv, yv) if validation else None,
                  validation_freq=validation_freq, callbacks=[*callbacks, counter.cb()])
    kernel, bias = model.get_weights()
    lr_now = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))
    return Run(callbacks, [kernel.T.copy(), bias.copy()], lr_now, out.getvalue(), counter.batches)


def fit_hookline(make_callbacks: Callable[[], list[Any]], *, epochs: int = 6, lr: float = 0.5,
                 seed: int = 0, noise: float = 0.0, validation: bool = True,
                 work_dir: Path | None = None, **runner_kwargs: Any) -> Run:
    x, y, xv, yv = data(seed, noise)
    kernel, bias = initial_weights(seed)
    net = torch.nn.Linear(4, 2)
    with torch.no_grad():
        net.weight.copy_(torch.from_numpy(kernel.T))
        net.bias.copy_(torch.from_numpy(bias))
    callbacks = make_callbacks()
    counter = _Counter()
    val = DataLoader(TensorDataset(torch.from_numpy(xv), torch.from_numpy(yv)), batch_size=BATCH)
    runner = Runner(
        net, optimizer={"type": "SGD", "lr": lr}, loss_fn=torch.nn.CrossEntropyLoss(),
        train_dataloader=DataLoader(TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
                                    batch_size=BATCH),
        val_dataloader=val if validation else None,
        metrics={"accuracy": "accuracy"}, max_epochs=epochs,
        work_dir=work_dir or tempfile.mkdtemp(), hooks=[*callbacks, counter.cb()],
        default_hooks={"logger": None, "progress": None, "checkpoint": None},
        **runner_kwargs)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runner.train()
    weights = [net.weight.detach().numpy().copy(), net.bias.detach().numpy().copy()]
    # what the callbacks printed (the Runner's own log lines go to the same stdout: left out)
    printed = "".join(line for line in out.getvalue().splitlines(keepends=True)
                      if " - hookline - " not in line)
    return Run(callbacks, weights, float(runner.optimizer.param_groups[0]["lr"]), printed,
               counter.batches, runner)


def both(make_callbacks: Callable[[], list[Any]], **kwargs: Any) -> tuple[Run, Run]:
    return fit_keras(make_callbacks, **kwargs), fit_hookline(make_callbacks, **kwargs)


def assert_same_history(a: dict[str, list[float]], b: dict[str, list[float]],
                        rel: float = 1e-4) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        assert len(a[key]) == len(b[key]), key
        np.testing.assert_allclose(np.asarray(a[key], dtype=float), np.asarray(b[key], dtype=float),
                                   rtol=rel, atol=1e-6, err_msg=key)
