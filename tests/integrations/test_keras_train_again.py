"""``runner.train()`` again (after a hook raised, or on a finished run) with Keras's callbacks:
it goes on as a resume would. EarlyStopping / ReduceLROnPlateau keep their counters, and a
``CSVLogger`` (``append=False``, Keras's default) keeps the rows of the epochs before: the run
stops at the epoch an uninterrupted one does, with its weights and its CSV."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, HookError, Runner

from ._twins import keras, one_thread  # noqa: F401  (autouse: one torch thread)

callbacks = keras.callbacks


def _run(work_dir: Path, fail_at: int | None) -> tuple[Runner, list[Any]]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(128, 4, generator=generator)
    y = ((x[:, 0] + 0.8 * torch.randn(128, generator=generator)) > 0).long()
    torch.manual_seed(0)
    made = [callbacks.EarlyStopping(monitor="val_loss", patience=2),
            callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=0),
            callbacks.CSVLogger(str(work_dir / "log.csv"))]
    runner = Runner(torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
                                        torch.nn.Linear(16, 2)),
                    optimizer={"type": "SGD", "lr": 0.5, "momentum": 0.9},
                    loss_fn=torch.nn.CrossEntropyLoss(),
                    train_dataloader=DataLoader(TensorDataset(x[:96], y[:96]), batch_size=32,
                                                shuffle=True),
                    val_dataloader=DataLoader(TensorDataset(x[96:], y[96:]), batch_size=32),
                    metrics={"acc": "accuracy"}, max_epochs=12, work_dir=str(work_dir), seed=0,
                    default_hooks={"progress": None, "logger": None, "checkpoint": None},
                    hooks=made)
    fired = {"done": fail_at is None}

    def flaky(r: Runner) -> None:
        if not fired["done"] and r.iter + 1 == fail_at:
            fired["done"] = True
            raise RuntimeError("flaky upload")

    runner.on("after_train_iter", flaky)
    return runner, made


def _csv_epochs(work_dir: Path) -> list[str]:
    return [line.split(",")[0] for line in (work_dir / "log.csv").read_text().splitlines()[1:]]


def test_train_again_after_a_failure_keeps_the_callbacks_state_and_csv_rows(tmp_path: Path
                                                                             ) -> None:
    whole, (whole_stop, _, _) = _run(tmp_path / "whole", None)
    whole.train()
    assert 0 < whole_stop.stopped_epoch < 11  # it did stop early
    runner, (stop, plateau, _) = _run(tmp_path / "again", fail_at=8)  # in epoch 3
    with pytest.raises(HookError, match="flaky upload"):
        runner.train()
    runner.train()
    assert (stop.stopped_epoch, stop.best, stop.wait) == (
        whole_stop.stopped_epoch, whole_stop.best, whole_stop.wait)
    assert runner.optimizer.param_groups[0]["lr"] == whole.optimizer.param_groups[0]["lr"]
    assert _csv_epochs(tmp_path / "again") == _csv_epochs(tmp_path / "whole") == [
        str(epoch) for epoch in range(whole_stop.stopped_epoch + 1)]
    # the epoch the failure cut keeps its running means: the same rows, value for value
    assert (tmp_path / "again" / "log.csv").read_text() == \
        (tmp_path / "whole" / "log.csv").read_text()
    assert all(torch.equal(a, b) for a, b in zip(runner.model.parameters(),
                                                 whole.model.parameters()))


def test_train_again_on_a_finished_run_changes_nothing(tmp_path: Path) -> None:
    runner, (stop, plateau, logger) = _run(tmp_path, None)
    runner.train()
    before = (stop.stopped_epoch, stop.best, plateau.best, _csv_epochs(tmp_path))
    runner.train()  # "nothing left to train": the run had stopped early
    assert (stop.stopped_epoch, stop.best, plateau.best, _csv_epochs(tmp_path)) == before
    assert len(before[3]) > 1 and logger.append is False  # its own setting put back


@pytest.mark.parametrize("monitor, expected", [
    ("val_accuracy", "have no 'val_accuracy'; did you mean 'val_acc'"),
    ("val_los", "did you mean 'val_loss'"),
])
def test_a_keras_monitor_the_logs_will_not_have_is_refused_at_build(tmp_path: Path, monitor: str,
                                                                    expected: str) -> None:

    with pytest.raises(ConfigError, match=expected):
        Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
               loss_fn=torch.nn.CrossEntropyLoss(),
               train_dataloader=DataLoader(TensorDataset(torch.ones(8, 4),
                                                         torch.ones(8).long()), batch_size=4),
               val_dataloader=DataLoader(TensorDataset(torch.ones(8, 4),
                                                       torch.ones(8).long()), batch_size=4),
               metrics={"acc": "accuracy"}, max_epochs=1, work_dir=str(tmp_path),
               hooks=[callbacks.EarlyStopping(monitor=monitor, mode="max")])


def test_a_keras_callback_method_with_the_wrong_signature_is_refused_at_build(tmp_path: Path
                                                                              ) -> None:
    class ForgotEpoch(callbacks.Callback):
        def on_epoch_end(self, logs=None):  # Keras calls on_epoch_end(epoch, logs)
            pass

    with pytest.raises(ConfigError, match=r"write def on_epoch_end\(self, epoch, logs=None\)"):
        _run(tmp_path, None)[0].register_hook(ForgotEpoch())
