"""Objects given to the wrong bridge: each is one ``ConfigError`` saying where it goes.

- ``HookCallback`` (hookline hooks inside a Lightning Trainer) takes hookline hooks and their
  configs; a Lightning callback goes into ``Trainer(callbacks=[...])``, a Keras callback cannot
  run in a Lightning Trainer at all (a hookline Runner runs it);
- a ``LightningModule`` in a Runner's ``hooks=[...]`` is the model: refused when the Runner is
  built (its hook methods share Keras's names, so it once passed for a Keras callback and failed
  at the first batch).
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner
from hookline.core import ConfigError

from ._lightning_twins import one_thread  # noqa: F401  (quiets Lightning's warnings)
from .lightning_toy import TinyRegressor, loader, pl

keras = pytest.importorskip("keras")
HookCallback = pytest.importorskip("hookline.integrations.lightning").HookCallback

QUIET = {"logger": None, "progress": None, "checkpoint": None}


class Counts(Hook):
    def __init__(self) -> None:
        self.iters = 0

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self.iters += 1


@pytest.mark.parametrize("add", [False, True])
def test_hookcallback_refuses_a_lightning_callback_naming_the_trainers_callbacks(add):
    callback = pl.callbacks.EarlyStopping(monitor="val_loss")
    with pytest.raises(ConfigError) as info:
        HookCallback().add(callback) if add else HookCallback(callback)
    message = str(info.value)
    assert message.startswith("HookCallback takes hookline Hooks")
    assert "Lightning callback EarlyStopping" in message
    assert "Trainer(callbacks=[" in message
    assert "a Runner hook" not in message and "Keras or Lightning callback instance" not in message


@pytest.mark.parametrize("callback", [
    lambda: keras.callbacks.EarlyStopping(monitor="val_loss"),
    lambda: {"type": "keras.callbacks.EarlyStopping", "monitor": "val_loss"},  # built, then refused
])
def test_hookcallback_refuses_a_keras_callback_saying_a_runner_runs_it(callback):
    with pytest.raises(ConfigError) as info:
        HookCallback(callback())
    message = str(info.value)
    assert message.startswith("HookCallback takes hookline Hooks")
    assert "Keras callback EarlyStopping" in message
    assert "cannot run inside a Lightning Trainer" in message and "hookline Runner" in message
    assert "a Runner hook" not in message


def test_hookcallback_refuses_other_objects_and_classes_with_its_own_message():
    with pytest.raises(ConfigError, match=r"^HookCallback takes hookline Hooks.*got 42"):
        HookCallback(42)
    with pytest.raises(ConfigError, match=r"class was given \(Counts\): pass an instance, Counts\(\)"):
        HookCallback(Counts)


def test_hookcallback_takes_hooks_and_hook_configs():
    counts = Counts()
    callback = HookCallback(counts, {"type": "EMAHook", "priority": "LOW"})
    assert [type(hook).__name__ for hook in callback.hooks] == ["Counts", "EMAHook"]
    trainer = pl.Trainer(max_epochs=1, accelerator="cpu", logger=False, enable_progress_bar=False,
                         enable_checkpointing=False, enable_model_summary=False,
                         callbacks=[HookCallback(counts)])
    trainer.fit(TinyRegressor(), loader())
    assert counts.iters == 2


def test_a_lightning_module_in_hooks_is_refused_when_the_runner_is_built(tmp_path):
    counts = Counts()
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    with pytest.raises(ConfigError) as info:
        Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
               loss_fn=torch.nn.CrossEntropyLoss(), train_dataloader=DataLoader(data, batch_size=8),
               max_epochs=1, work_dir=tmp_path, default_hooks=QUIET,
               hooks=[counts, TinyRegressor()])
    message = str(info.value)
    assert "LightningModule (TinyRegressor)" in message and "model=" in message
    assert counts.iters == 0


def test_a_lightning_module_given_to_register_hook_is_refused(tmp_path):
    runner = Runner(TinyRegressor(), train_dataloader=loader(), max_epochs=1, work_dir=tmp_path,
                    default_hooks=QUIET)
    with pytest.raises(ConfigError, match="pass it as the Runner's model"):
        runner.register_hook(TinyRegressor())


class PL1BatchEnd(pl.Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx):
        pass


class PL1EpochEnd(pl.Callback):
    def on_train_epoch_end(self, trainer, pl_module, outputs):
        pass


@pytest.mark.parametrize("callback, expected", [
    (PL1BatchEnd, r"Lightning 2 calls on_train_batch_end\(trainer, pl_module, outputs, batch, "
                  r"batch_idx\)"),
    (PL1EpochEnd, r"write def on_train_epoch_end\(self, trainer, pl_module\)"),
])
def test_a_pl1_signature_is_refused_at_build_naming_lightning_2s(tmp_path, callback, expected):
    with pytest.raises(ConfigError, match=expected):
        Runner(TinyRegressor(), train_dataloader=loader(), max_epochs=1, work_dir=str(tmp_path),
               hooks=[callback()], default_hooks={"logger": None, "progress": None,
                                                  "checkpoint": None})


def test_the_hook_table_names_the_lightning_and_keras_callbacks_it_runs(tmp_path):
    runner = Runner(torch.nn.Linear(1, 1), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.MSELoss(), train_dataloader=loader(), max_epochs=1,
                    work_dir=str(tmp_path), default_hooks={"progress": None},
                    hooks=[pl.callbacks.LearningRateMonitor(),
                           keras.callbacks.TerminateOnNaN()])
    table = runner.hook_table()
    assert "LightningCalls[LearningRateMonitor]" in table
    assert "KerasCallbackHook[TerminateOnNaN]" in table
