"""A stage method without the runner parameter, and a Keras method without Keras's arguments,
are one ConfigError when the hook is registered, naming the signatures that work; not a
TypeError after the first epoch."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Hook, Runner
from hookline.hooks import KerasCallback


def make(tmp_path, hooks, **kwargs) -> Runner:
    torch.manual_seed(0)
    x = torch.randn(32, 4)
    return Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(TensorDataset(x, (x[:, 0] > 0).long()),
                                              batch_size=8),
                  max_epochs=2, work_dir=tmp_path / "run", hooks=hooks,
                  default_hooks={"progress": None, "logger": None}, **kwargs)


class NoRunner(Hook):
    def after_train_epoch(self):
        raise AssertionError("never called")


class NoRunnerIter(Hook):
    def after_train_iter(self, **kwargs):
        raise AssertionError("never called")


def test_a_stage_method_without_runner_is_refused_at_registration(tmp_path):
    with pytest.raises(ConfigError) as caught:
        make(tmp_path, [NoRunner()])
    assert str(caught.value) == (
        "NoRunner.after_train_epoch() takes no runner: the Runner calls it as "
        "after_train_epoch(runner). Write def after_train_epoch(self, runner) (runner alone)")
    assert not (tmp_path / "run").exists()


def test_the_full_signature_is_named_for_a_stage_with_arguments(tmp_path):
    with pytest.raises(ConfigError, match=r"NoRunnerIter\.after_train_iter\(\*\*kwargs\) takes no "
                                          r"runner: .* or MMEngine's full def after_train_iter\("
                                          r"self, runner, batch_idx, data_batch=None, "
                                          r"outputs=None\)"):
        make(tmp_path, [NoRunnerIter()])


def test_runner_on_refuses_the_method_too(tmp_path):
    runner = make(tmp_path, [])
    with pytest.raises(ConfigError, match="takes no runner"):
        runner.register_hook(NoRunner())


class Accepted(Hook):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def before_train(self, runner):  # mmcv's form
        self.calls.append("before_train")

    def after_train_iter(self, runner, outputs):  # some of the stage's arguments
        self.calls.append("iter")

    def after_train_epoch(self, *args):  # runner through *args
        self.calls.append("epoch")

    @staticmethod
    def after_train(runner):
        STATIC_CALLS.append(runner.epoch)


STATIC_CALLS: list[int] = []


def test_the_accepted_forms_still_run(tmp_path):
    hook = Accepted()
    make(tmp_path, [hook]).train()
    assert hook.calls == ["before_train", *["iter"] * 4, "epoch", *["iter"] * 4, "epoch"]
    assert STATIC_CALLS == [2]


class WrongKeras(KerasCallback):
    def on_epoch_end(self, logs):
        raise AssertionError("never called")


class WrongBatch(KerasCallback):
    def on_train_batch_end(self, logs=None):
        raise AssertionError("never called")


class Keras2Alias(KerasCallback):
    def on_batch_end(self):
        raise AssertionError("never called")


@pytest.mark.parametrize(("hook", "message"), [
    (WrongKeras(), "WrongKeras.on_epoch_end(logs) does not take what Keras passes: Keras calls "
                   "on_epoch_end(epoch, logs); write def on_epoch_end(self, epoch, logs=None)"),
    (WrongBatch(), "WrongBatch.on_train_batch_end(logs=None) does not take what Keras passes: "
                   "Keras calls on_train_batch_end(batch, logs); write def "
                   "on_train_batch_end(self, batch, logs=None)"),
    (Keras2Alias(), "Keras2Alias.on_batch_end() does not take what Keras passes: Keras calls "
                    "on_batch_end(batch, logs); write def on_batch_end(self, batch, logs=None)"),
], ids=["on_epoch_end(logs)", "on_train_batch_end(logs)", "on_batch_end()"])
def test_a_keras_method_with_another_signature_is_refused_at_registration(tmp_path, hook,
                                                                          message):
    with pytest.raises(ConfigError) as caught:
        make(tmp_path, [hook])
    assert str(caught.value) == message
    assert not (tmp_path / "run").exists()


class KerasForms(KerasCallback):
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def on_train_begin(self, logs=None):
        self.seen.append(("begin",))

    def on_epoch_end(self, epoch, logs):  # logs without a default: Keras always passes it
        self.seen.append(("epoch", epoch, sorted(logs)))

    def on_train_batch_end(self, *args):
        self.seen.append(("batch", len(args)))


def test_keras_signatures_that_take_what_keras_passes_run(tmp_path):
    hook = KerasForms()
    make(tmp_path, [hook]).train()
    assert hook.seen[0] == ("begin",)
    assert ("epoch", 0, ["loss"]) in hook.seen and ("epoch", 1, ["loss"]) in hook.seen
    assert hook.seen.count(("batch", 2)) == 8
