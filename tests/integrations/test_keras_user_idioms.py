"""What Keras users do in their callbacks works as in ``keras.Model.fit`` (a probe's findings):
plain-dict logs, one shared ``self.model`` with ``model.history``, the ``acc`` metric name,
the learning-rate variable's methods, evaluate's params, counters kept across a resume, and
the refusals and messages for what a run cannot take."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
import torch

from hookline import HookError
from hookline.core import ConfigError
from hookline.integrations.keras import check_keras_callback
from hookline.integrations.keras_model import metric_direction

from ..hooks._toy import Explode, make_runner, one_thread  # noqa: F401  (an autouse fixture)

keras = pytest.importorskip("keras")
callbacks = keras.callbacks


class DictOps(callbacks.Callback):
    """Does with each ``logs`` what Keras users do with a dict, recording the results."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, tuple] = {}

    def _try(self, where: str, logs: dict) -> None:
        self.seen[where] = (isinstance(logs, dict), sorted(logs.copy()), json.loads(json.dumps(logs)),
                            sorted(logs | {"x": 1}), sorted({"x": 1} | logs),
                            type(copy.deepcopy(logs)), type(pickle.loads(pickle.dumps(logs))))

    def on_train_batch_end(self, batch, logs=None):
        self._try("batch", logs)

    def on_test_batch_end(self, batch, logs=None):
        self._try("test_batch", logs)

    def on_epoch_end(self, epoch, logs=None):
        self._try("epoch", logs)
        self.epoch_type = type(logs)

    def on_test_end(self, logs=None):
        self._try("test_end", logs)
        self.test_type = type(logs)

    def on_train_end(self, logs=None):
        self._try("train_end", logs)
        self.train_end_type = type(logs)


def test_logs_are_dicts_that_copy_merge_and_serialize(tmp_path):
    ops = DictOps()
    make_runner(tmp_path, hooks=[ops], max_epochs=1).train()
    assert sorted(ops.seen) == ["batch", "epoch", "test_batch", "test_end", "train_end"]
    for where, (is_dict, keys, dumped, merged, rmerged, deep, pickled) in ops.seen.items():
        assert is_dict, where
        assert sorted(dumped) == keys and all(isinstance(v, float) for v in dumped.values())
        assert merged == rmerged == sorted([*keys, "x"])
        assert deep is dict and pickled is dict, where
    assert ops.epoch_type is ops.test_type is ops.train_end_type is dict  # plain dicts


def test_a_value_one_callback_adds_to_the_logs_reaches_the_next(tmp_path):
    class Adds(callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            logs["extra"] = 1.0

        def on_epoch_end(self, epoch, logs=None):
            logs["extra"] = 2.0

    class Reads(callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.batch = logs.copy()

        def on_epoch_end(self, epoch, logs=None):
            self.epoch = json.loads(json.dumps(logs))

    reads = Reads()
    make_runner(tmp_path, hooks=[Adds(), reads], max_epochs=1).train()
    assert reads.batch["extra"] == 1.0 and reads.epoch["extra"] == 2.0


def test_callbacks_share_one_model_whose_history_is_the_automatic_history(tmp_path):
    class Writer(callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.my_flag = epoch

    class Reader(callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.at_begin = self.model.history

        def on_epoch_end(self, epoch, logs=None):
            history = self.model.history
            self.epochs = list(history.epoch)  # History runs after every callback, as in fit
            self.flag = self.model.my_flag

    writer, reader = Writer(), Reader()
    make_runner(tmp_path, hooks=[writer, reader], max_epochs=2).train()
    assert writer.model is reader.model
    assert isinstance(reader.at_begin, callbacks.History)
    assert reader.epochs == [0] and reader.flag == 1
    history = reader.model.history
    assert history.epoch == [0, 1] and sorted(history.history) == [
        "accuracy", "loss", "val_accuracy", "val_loss"]


def test_a_history_given_is_model_history_and_no_other_is_added(tmp_path):
    given = callbacks.History()

    class Reader(callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.history = self.model.history

    reader = Reader()
    make_runner(tmp_path, hooks=[reader, given], max_epochs=2).train()
    assert reader.history is given and given.epoch == [0, 1]


@pytest.mark.parametrize("name", ["acc", "accuracy"])
def test_monitors_know_the_direction_of_keras_compile_names(tmp_path, name):
    stop = callbacks.EarlyStopping(monitor=f"val_{name}", patience=5)
    plateau = callbacks.ReduceLROnPlateau(monitor=f"val_{name}", patience=5)
    make_runner(tmp_path, hooks=[stop, plateau], metrics={name: "accuracy"}, max_epochs=1).train()
    assert stop.monitor_op.__name__ == "greater" and plateau.monitor_op.__name__ == "greater"


def test_metric_direction_reads_the_spec_and_compile_names():
    def top1(preds, targets):
        return preds

    class Higher:
        higher_is_better = False

    assert metric_direction(keras, "acc", top1) == "up"   # Keras's compile name
    assert metric_direction(keras, "ce", top1) == "down"
    assert metric_direction(keras, "mine", "accuracy") == "up"  # the spec's name
    assert metric_direction(keras, "accuracy", Higher()) == "down"  # a torchmetrics flag
    assert metric_direction(keras, "mine", top1) is None


def test_learning_rate_and_iterations_behave_as_keras_variables(tmp_path):
    class Idioms(callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            optimizer = self.model.optimizer
            self.before = float(optimizer.learning_rate.numpy())
            optimizer.learning_rate.assign(0.01)
            self.after = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
            self.iterations = int(optimizer.iterations.numpy())

    idioms = Idioms()
    runner = make_runner(tmp_path, hooks=[idioms], max_epochs=1, lr=0.05)
    runner.train()
    assert idioms.before == pytest.approx(0.05) and idioms.after == pytest.approx(0.01)
    assert runner.optim_wrapper.param_groups[0]["lr"] == pytest.approx(0.01)
    assert idioms.iterations == 6


def test_a_standalone_test_pass_gets_evaluate_params(tmp_path):
    class Params(callbacks.Callback):
        def on_test_end(self, logs=None):
            self.seen = dict(self.params)

    params = Params()
    test_data = torch.utils.data.TensorDataset(torch.zeros(20, 6), torch.zeros(20).long())
    runner = make_runner(tmp_path, hooks=[params], max_epochs=2,
                         test_dataloader=torch.utils.data.DataLoader(test_data, batch_size=8))
    runner.test()
    assert params.seen["epochs"] == 1 and params.seen["steps"] == 3
    runner.val()
    assert params.seen["epochs"] == 1 and params.seen["steps"] == 3  # 48 val samples, 16 a batch
    runner.train()
    assert params.seen["epochs"] == 2 and params.seen["steps"] == 6  # fit's, in training


def _counting_callbacks() -> list:
    # min_delta too large to improve: best is the first epoch's, wait counts every later epoch
    return [callbacks.EarlyStopping(monitor="val_loss", patience=100, min_delta=10.0),
            callbacks.ReduceLROnPlateau(monitor="val_loss", patience=100, min_delta=10.0)]


def test_a_resumed_run_keeps_early_stopping_and_plateau_counters(tmp_path):
    whole = _counting_callbacks()
    make_runner(tmp_path / "whole", hooks=whole, max_epochs=4, shuffle=False).train()
    with pytest.raises(HookError):
        make_runner(tmp_path / "run", hooks=[*_counting_callbacks(), Explode(15)], max_epochs=4,
                    shuffle=False).train()  # mid epoch 2: epochs 0 and 1 counted
    resumed = _counting_callbacks()
    make_runner(tmp_path / "run", hooks=resumed, max_epochs=4, shuffle=False,
                resume=tmp_path / "run" / "iter_15.pth").train()
    for full, again in zip(whole, resumed):
        assert again.wait == full.wait == 3
        assert again.best == pytest.approx(full.best)


@pytest.mark.parametrize("name", ["ModelCheckpoint", "TensorBoard", "BackupAndRestore"])
def test_tf_keras_callbacks_are_refused_as_keras_ones(name):
    base = type("Callback", (), {"__module__": "tf_keras.src.callbacks"})
    tf_callback = type(name, (base,), {"__module__": "tf_keras.src.callbacks"})
    with pytest.raises(ConfigError, match=f"tf_keras.callbacks.{name} cannot run"):
        check_keras_callback(tf_callback())


def test_registering_a_class_says_to_pass_an_instance(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1)
    with pytest.raises(ConfigError, match=r"Keras or Lightning callback instance; a class was "
                                          r"given .*History\): pass an instance, History\(\)"):
        runner.register_hook(callbacks.History)


def test_a_callback_class_in_hooks_says_to_pass_an_instance(tmp_path):
    with pytest.raises(ConfigError, match=r"hooks\[0\] is the class History; pass an instance, "
                                          r"History\(\.\.\.\)"):
        make_runner(tmp_path, max_epochs=1, hooks=[callbacks.History])
