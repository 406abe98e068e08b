"""Keras callbacks see what ``keras.Model.fit`` gives them in the less common paths: a stop in
the middle of an epoch (Keras validates that epoch), the validation batches' running metrics,
hookline's own ``KerasCallback`` base (batch-size-weighted means), a ``KerasLogBook`` given after
the callbacks, and learning rates of several param groups that pass through 0.

Each comparison trains the twin models of ``_twins.py`` once per framework (same data, weights
and SGD trajectory).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import HookError, Runner
from hookline.core import ConfigError
from hookline.hooks import KerasCallback
from hookline.integrations.keras_logs import KerasLogBook
from hookline.integrations.keras_model import RATIO_KEY, KerasOptimizer, lr_ratios

from ..hooks._toy import make_runner
from ._twins import (  # one_thread is an autouse fixture
    assert_same_history,
    both,
    fit_hookline,
    fit_keras,
    keras,
    one_thread,  # noqa: F401
)

callbacks = keras.callbacks


def _values(logs: Any) -> dict[str, float]:
    return {key: float(value) for key, value in dict(logs or {}).items()}


class Events(callbacks.Callback):
    """Records the evaluation and epoch-end calls with their logs."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple] = []

    def on_test_begin(self, logs=None):
        self.seen.append(("test_begin",))

    def on_test_batch_end(self, batch, logs=None):
        self.seen.append(("test_batch_end", batch, _values(logs)))

    def on_test_end(self, logs=None):
        self.seen.append(("test_end", _values(logs)))

    def on_epoch_end(self, epoch, logs=None):
        self.seen.append(("epoch_end", epoch, _values(logs)))

    def on_train_end(self, logs=None):
        self.seen.append(("train_end", _values(logs)))


class StopAfter(callbacks.Callback):
    """Sets ``self.model.stop_training`` after ``batches`` training batches in all (a budget)."""

    def __init__(self, batches: int) -> None:
        super().__init__()
        self.batches, self.done = batches, 0

    def on_train_batch_end(self, batch, logs=None):
        self.done += 1
        if self.done >= self.batches:
            self.model.stop_training = True


def assert_same_events(theirs: list[tuple], ours: list[tuple]) -> None:
    assert [e[:-1] if isinstance(e[-1], dict) else e for e in ours] == \
        [e[:-1] if isinstance(e[-1], dict) else e for e in theirs]
    for their, our in zip(theirs, ours):
        if isinstance(their[-1], dict):
            assert sorted(our[-1]) == sorted(their[-1]), their[0]
            for key, value in their[-1].items():
                assert our[-1][key] == pytest.approx(value, rel=1e-4, abs=1e-6, nan_ok=True), \
                    (their[:-1], key)


def test_a_stop_inside_an_epoch_validates_that_epoch_as_fit_does():
    """The Keras guide's ``on_epoch_end`` reading ``logs["val_loss"]`` next to a callback that
    stops mid-epoch: ``fit`` validates the cut epoch, so every key is there."""
    def make():
        return [StopAfter(4), Events(), callbacks.History()]  # epoch 1 is cut after 1 batch

    keras_run, hook_run = both(make, epochs=5)
    assert keras_run.batches == hook_run.batches == 4
    k_events, h_events = keras_run.of(Events).seen, hook_run.of(Events).seen
    assert_same_events(k_events, h_events)
    assert [e[0] for e in h_events].count("test_end") == 2
    assert sorted(h_events[-1][1]) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert_same_history(keras_run.of(callbacks.History).history,
                        hook_run.of(callbacks.History).history)
    assert hook_run.runner.epoch == 1  # the Runner still counts the cut epoch as unfinished


def test_a_cut_epoch_after_which_no_validation_was_due_is_not_validated():
    make = lambda: [StopAfter(7), Events()]  # noqa: E731  (epoch 2, of 3 batches, is cut)
    keras_run = fit_keras(make, epochs=5, validation_freq=2)
    hook_run = fit_hookline(make, epochs=5, val_interval=2)
    k_events, h_events = keras_run.of(Events).seen, hook_run.of(Events).seen
    assert_same_events(k_events, h_events)
    assert [e[0] for e in h_events].count("test_end") == 1  # after epoch 1 only
    assert "val_loss" not in h_events[-1][1]


class _Budget:
    """A duck-typed Keras callback stopping an iteration-based run after ``batches``."""

    def __init__(self, batches: int) -> None:
        self.batches, self.model, self.ends, self.tests = batches, None, [], 0

    def set_model(self, model):
        self.model = model

    def on_train_batch_end(self, batch, logs=None):
        if self.model.optimizer.iterations + 1 >= self.batches:
            self.model.stop_training = True

    def on_test_end(self, logs=None):
        self.tests += 1

    def on_epoch_end(self, epoch, logs=None):
        self.ends.append((epoch, dict(logs)))


@pytest.mark.parametrize(("stop_after", "validations"), [(4, 2), (3, 1)])
def test_an_iteration_based_run_cut_short_is_validated_unless_it_just_was(
        tmp_path, stop_after, validations):
    budget = _Budget(stop_after)
    runner = make_runner(tmp_path, hooks=[budget], max_iters=9, val_interval=3)
    runner.train()
    assert runner.iter == stop_after
    assert budget.tests == validations  # after iteration 3; at 4, the run's end validation
    ((epoch, logs),) = budget.ends
    assert epoch == 0 and sorted(logs) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert logs["val_loss"] == pytest.approx(runner.val_loop.last_metrics["loss"])


def test_validation_batch_logs_have_the_running_metrics_as_in_fit():
    class TestBatches(callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seen = []

        def on_test_batch_end(self, batch, logs=None):
            self.seen.append(("test_batch_end", batch, _values(logs)))

    keras_run, hook_run = both(lambda: [TestBatches()], epochs=2)
    ours = hook_run.of(TestBatches).seen
    assert_same_events(keras_run.of(TestBatches).seen, ours)
    assert sorted(ours[0][2]) == ["accuracy", "loss"] and len(ours) == 4  # 30 samples: 24 + 6


def test_without_a_test_batch_method_no_metric_runs_per_validation_batch(tmp_path):
    runner = make_runner(tmp_path, hooks=[callbacks.History()], max_epochs=1)
    runner.train()
    book = next(h for h in runner.hooks.hooks if isinstance(h, KerasLogBook))
    assert book.test_batch_metrics is False
    assert sorted(book.test_batch_logs()) == ["loss"]


def test_the_keras_callback_base_weights_its_means_by_batch_size_as_fit_does():
    class Means(KerasCallback):
        def __init__(self):
            self.epochs, self.test_batches = [], []

        def on_epoch_end(self, epoch, logs=None):
            self.epochs.append(logs["loss"])

        def on_test_batch_end(self, batch, logs=None):
            self.test_batches.append(logs["loss"])

    class Reference(callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.test_batches = []

        def on_test_batch_end(self, batch, logs=None):
            self.test_batches.append(logs["loss"])

    keras_run = fit_keras(lambda: [callbacks.History(), Reference()], epochs=2)
    hook_run = fit_hookline(lambda: [Means()], epochs=2)  # batches of 24, 24 and 16
    np.testing.assert_allclose(hook_run.of(Means).epochs,
                               keras_run.of(callbacks.History).history["loss"], rtol=1e-5)
    np.testing.assert_allclose(hook_run.of(Means).test_batches,
                               keras_run.of(Reference).test_batches, rtol=1e-5)


def test_a_log_book_given_after_the_callbacks_is_refused_when_the_run_starts(tmp_path):
    history = callbacks.History()
    runner = make_runner(tmp_path, hooks=[history, KerasLogBook(train_metrics=False)],
                         max_epochs=1)
    with pytest.raises(HookError, match="register it before them") as info:
        runner.train()
    assert isinstance(info.value.__cause__, ConfigError)
    assert "KerasLogBook(train_metrics=False)" in str(info.value)
    assert "History" in str(info.value)
    before = callbacks.History()
    make_runner(tmp_path / "b", hooks=[KerasLogBook(train_metrics=False), before],
                max_epochs=1).train()
    assert sorted(before.history) == ["loss", "val_accuracy", "val_loss"]


def _groups(lrs: list[float]) -> torch.optim.SGD:
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    return torch.optim.SGD([{"params": net[0].parameters(), "lr": lrs[0]},
                            {"params": net[1].parameters(), "lr": lrs[1]}])


def test_a_warmup_through_zero_keeps_the_ratio_between_param_groups(tmp_path):
    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    optimizer = torch.optim.SGD([{"params": net[0].parameters(), "lr": 0.01},
                                 {"params": net[2].parameters(), "lr": 0.1}])
    seen = []
    schedule = callbacks.LearningRateScheduler(lambda epoch, lr: 0.0 if epoch == 0 else 0.01)
    record = callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(
        [group["lr"] for group in optimizer.param_groups]))
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    Runner(net, optimizer=optimizer, loss_fn=torch.nn.CrossEntropyLoss(),
           train_dataloader=DataLoader(data, batch_size=8), max_epochs=3, work_dir=tmp_path,
           hooks=[schedule, record], default_hooks={"logger": None, "progress": None}).train()
    assert seen == [[0.0, 0.0], [0.01, pytest.approx(0.1)], [0.01, pytest.approx(0.1)]]
    assert optimizer.state_dict()["param_groups"][1][RATIO_KEY] == pytest.approx(10.0)


def test_learning_rate_ratios_come_from_initial_lr_or_are_refused_when_unknown():
    scheduled = _groups([0.0, 0.0])
    for group, initial in zip(scheduled.param_groups, (0.02, 0.2)):
        group["initial_lr"] = initial  # as torch schedulers set it
    KerasOptimizer(scheduled).learning_rate = 0.05
    assert [g["lr"] for g in scheduled.param_groups] == [0.05, pytest.approx(0.5)]
    assert lr_ratios(_groups([0.0, 0.0])) == [1.0, 1.0]
    frozen = _groups([0.0, 0.5])  # the first group frozen with lr 0: no ratio to it
    with pytest.raises(ConfigError, match="first param group has lr 0"):
        KerasOptimizer(frozen).learning_rate = 0.1
    assert [g["lr"] for g in frozen.param_groups] == [0.0, 0.5]
