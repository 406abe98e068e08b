"""Keras and Lightning callbacks in one Runner, a stop inside an epoch: the cut epoch is validated
once, and each framework sees it as its own ``fit`` would.

Lightning: the cut epoch's ``on_validation_epoch_end`` with ``current_epoch`` that epoch, then
its ``on_train_epoch_end``, then ``on_train_end`` counting it (as ``Trainer.fit``, and as a run
without Keras callbacks). Keras: ``on_epoch_end`` of the cut epoch with its ``val_*`` keys, then
``on_train_end`` (as ``keras.Model.fit``): after the cut epoch's whole end, Lightning's
``on_train_epoch_end`` included, since ``EarlyStopping(restore_best_weights=True)`` swaps the
weights there. Whichever framework stops the run, in whichever order the callbacks are given.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._lightning_twins import fit_hookline, fit_lightning, one_thread, pl  # noqa: F401

keras = pytest.importorskip("keras")

STOP_STEP = 4  # 3 batches per epoch: the first batch of epoch 1


class LitWatch(pl.Callback):
    def __init__(self, log: list[Any], stop: bool) -> None:
        self.record, self.stop = log, stop

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if self.stop and trainer.global_step == STOP_STEP:
            trainer.should_stop = True

    def on_validation_epoch_end(self, trainer, pl_module):
        self.record.append(("lightning", "validation", trainer.current_epoch))

    def on_train_epoch_end(self, trainer, pl_module):
        self.record.append(("lightning", "epoch_end", trainer.current_epoch))

    def on_train_end(self, trainer, pl_module):
        self.record.append(("lightning", "train_end", trainer.current_epoch))


class KerasWatch(keras.callbacks.Callback):
    def __init__(self, log: list[Any], stop: bool) -> None:
        super().__init__()
        self.record, self.stop, self.batches = log, stop, 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        if self.stop and self.batches == STOP_STEP:
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        self.record.append(("keras", "epoch_end", epoch, sorted(k for k in logs if "val" in k)))

    def on_train_end(self, logs=None):
        self.record.append(("keras", "train_end", sorted(k for k in logs if "val" in k)))


def _lightning_only(log: list[Any]) -> list[Any]:
    return [entry for entry in log if entry[0] == "lightning"]


@pytest.mark.parametrize("stopper", ["lightning", "keras"])
@pytest.mark.parametrize("keras_first", [True, False])
def test_the_cut_epoch_is_validated_once_as_each_framework_would(stopper, keras_first):
    theirs: list[Any] = []  # Trainer.fit, stopped by Lightning at the same step
    fit_lightning(lambda: [LitWatch(theirs, stop=True)], epochs=4)
    assert theirs == [("lightning", "validation", 0), ("lightning", "epoch_end", 0),
                      ("lightning", "validation", 1), ("lightning", "epoch_end", 1),
                      ("lightning", "train_end", 2)]

    log: list[Any] = []

    def callbacks() -> list[Any]:
        lit = LitWatch(log, stop=stopper == "lightning")
        kc = KerasWatch(log, stop=stopper == "keras")
        return [kc, lit] if keras_first else [lit, kc]

    run = fit_hookline(callbacks, epochs=4)
    assert run.runner.epoch == 1 and run.runner.iter == STOP_STEP
    assert _lightning_only(log) == theirs
    val = ["val_accuracy", "val_loss"]
    keras_calls = [entry for entry in log if entry[0] == "keras"]
    assert keras_calls == [("keras", "epoch_end", 0, val), ("keras", "epoch_end", 1, val),
                           ("keras", "train_end", val)]
    # the cut epoch ends (Lightning's on_train_epoch_end too) before Keras's on_train_end
    assert log.index(("lightning", "epoch_end", 1)) < log.index(("keras", "train_end", val))
    assert log.index(("lightning", "validation", 1)) < log.index(("keras", "train_end", val))


def test_without_keras_callbacks_lightning_sees_the_same():
    log: list[Any] = []
    fit_hookline(lambda: [LitWatch(log, stop=True)], epochs=4)
    assert log == [("lightning", "validation", 0), ("lightning", "epoch_end", 0),
                   ("lightning", "validation", 1), ("lightning", "epoch_end", 1),
                   ("lightning", "train_end", 2)]


def test_the_cut_epoch_is_validated_once(tmp_path):
    passes: list[int] = []

    class CountPasses(pl.Callback):
        def on_validation_start(self, trainer, pl_module):
            passes.append(trainer.current_epoch)

    log: list[Any] = []
    fit_hookline(lambda: [KerasWatch(log, stop=False), LitWatch(log, stop=True), CountPasses()],
                 epochs=4)
    assert passes == [0, 1]
