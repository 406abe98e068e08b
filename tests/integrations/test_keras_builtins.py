"""Keras's own callbacks in a hookline run behave as in a real ``keras.Model.fit`` on the same data.

Each test trains the twin models of ``_twins.py`` once per framework with fresh instances of the
same callbacks and compares what the callbacks saw and did: History, the stop epoch, the learning
rate trajectory, CSV files, restored weights, printed lines, posted JSON.
"""

from __future__ import annotations

import csv
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest

from hookline import HOOKS
from hookline.core import ConfigError
from hookline.hooks import KerasCallback

from ._twins import (  # one_thread is an autouse fixture
    assert_same_history,
    both,
    fit_hookline,
    fit_keras,
    keras,
    one_thread,  # noqa: F401
)

callbacks = keras.callbacks


def test_history_logs_match_fit_with_train_metrics_and_val_prefix():
    keras_run, hook_run = both(lambda: [callbacks.History()], epochs=3)
    history = hook_run.of(callbacks.History).history
    assert sorted(history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert_same_history(keras_run.of(callbacks.History).history, history)
    assert hook_run.of(callbacks.History).epoch == [0, 1, 2]
    np.testing.assert_allclose(keras_run.weights[0], hook_run.weights[0], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("restore", [False, True])
def test_early_stopping_stops_at_the_same_epoch(restore):
    def make():
        return [callbacks.EarlyStopping(monitor="val_loss", patience=1, min_delta=0.01,
                                        restore_best_weights=restore), callbacks.History()]

    keras_run, hook_run = both(make, epochs=12, noise=0.8)
    k_stop, h_stop = keras_run.of(callbacks.EarlyStopping), hook_run.of(callbacks.EarlyStopping)
    assert 0 < k_stop.stopped_epoch < 11  # it did stop early
    assert h_stop.stopped_epoch == k_stop.stopped_epoch
    assert h_stop.best_epoch == k_stop.best_epoch
    assert hook_run.runner.epoch == k_stop.stopped_epoch + 1
    assert_same_history(keras_run.of(callbacks.History).history,
                        hook_run.of(callbacks.History).history)
    for k_w, h_w in zip(keras_run.weights, hook_run.weights):  # restored (or last) weights
        np.testing.assert_allclose(k_w, h_w, rtol=1e-4, atol=1e-6)


def test_early_stopping_on_accuracy_in_auto_mode_knows_higher_is_better():
    def make():
        return [callbacks.EarlyStopping(monitor="val_accuracy", patience=2), callbacks.History()]

    keras_run, hook_run = both(make, epochs=12, noise=0.8)
    assert hook_run.of(callbacks.EarlyStopping).monitor_op is \
        keras_run.of(callbacks.EarlyStopping).monitor_op
    assert hook_run.of(callbacks.EarlyStopping).stopped_epoch == \
        keras_run.of(callbacks.EarlyStopping).stopped_epoch


def test_reduce_lr_on_plateau_follows_the_same_learning_rate_trajectory():
    def make():
        return [callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=0,
                                            min_delta=0.02), callbacks.History()]

    keras_run, hook_run = both(make, epochs=8)
    k_hist, h_hist = (run.of(callbacks.History).history for run in (keras_run, hook_run))
    assert len(set(k_hist["learning_rate"])) > 2  # it did reduce, more than once
    assert_same_history(k_hist, h_hist)  # learning_rate included: ReduceLROnPlateau adds it
    assert hook_run.lr == pytest.approx(keras_run.lr)


def test_learning_rate_scheduler_sets_the_torch_optimizer_lr():
    def make():
        return [callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch else lr),
                callbacks.History()]

    keras_run, hook_run = both(make, epochs=4)
    assert hook_run.of(callbacks.History).history["learning_rate"] == [0.5, 0.25, 0.125, 0.0625]
    assert_same_history(keras_run.of(callbacks.History).history,
                        hook_run.of(callbacks.History).history)
    assert hook_run.lr == keras_run.lr == 0.0625


def test_csv_logger_writes_the_same_file(tmp_path):
    runs = {}
    for name in ("keras", "hookline"):
        path = tmp_path / f"{name}.csv"
        make = lambda path=path: [callbacks.ReduceLROnPlateau(patience=0, min_delta=0.05),  # noqa: E731
                                  callbacks.CSVLogger(str(path))]
        runner = both(make, epochs=3)[0 if name == "keras" else 1]
        runs[name] = list(csv.reader(path.read_text().splitlines()))
        assert runner is not None
    keras_rows, hook_rows = runs["keras"], runs["hookline"]
    assert keras_rows[0] == hook_rows[0] == ["epoch", "accuracy", "learning_rate", "loss",
                                             "val_accuracy", "val_loss"]
    assert len(keras_rows) == len(hook_rows) == 4
    np.testing.assert_allclose(np.array(keras_rows[1:], dtype=float),
                               np.array(hook_rows[1:], dtype=float), rtol=1e-4, atol=1e-6)


def test_lambda_callback_sees_the_same_calls():
    def make():
        seen: list = []
        return [callbacks.LambdaCallback(
            on_train_begin=lambda logs: seen.append(("begin", dict(logs))),
            on_epoch_begin=lambda epoch, logs: seen.append(("epoch_begin", epoch)),
            on_train_batch_end=lambda batch, logs: seen.append(("batch", batch, sorted(logs))),
            on_epoch_end=lambda epoch, logs: seen.append(("epoch_end", epoch, sorted(logs))),
            on_train_end=lambda logs: seen.append(("end", sorted(logs))),
            seen=seen)]

    keras_run, hook_run = both(make, epochs=2)
    k_seen, h_seen = keras_run.callbacks[0].seen, hook_run.callbacks[0].seen
    assert h_seen == k_seen
    assert ("batch", 2, ["accuracy", "loss"]) in h_seen


def test_terminate_on_nan_stops_at_the_same_batch():
    keras_run, hook_run = both(lambda: [callbacks.TerminateOnNaN(), callbacks.History()],
                               epochs=4, lr=1e38)  # the second step overflows the loss
    assert keras_run.batches == hook_run.batches == 2
    assert hook_run.stdout.count("Invalid loss, terminating training") == 1
    assert hook_run.stdout == keras_run.stdout
    k_hist, h_hist = (run.of(callbacks.History).history for run in (keras_run, hook_run))
    assert h_hist["loss"] == k_hist["loss"] == [np.inf]
    # both validate the cut epoch (on NaN weights), as fit does for any stop_training
    assert sorted(h_hist) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert_same_history(k_hist, h_hist)


def test_progbar_logger_prints_the_epoch_lines_and_metrics():
    # fit(verbose=1) is what makes Keras's ProgbarLogger print ("auto" in a hookline run)
    keras_run = fit_keras(lambda: [callbacks.ProgbarLogger()], epochs=2, verbose=1)
    hook_run = fit_hookline(lambda: [callbacks.ProgbarLogger()], epochs=2)

    def shape(text: str) -> list[str]:  # numbers and timings differ in their last digits
        text = re.sub(r"\x1b\[[0-9;]*m|\x08", "", text)  # colours, and backspaces that redraw
        lines = [line.strip() for line in re.split(r"[\r\n]+", text) if line.strip()]
        return [re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?(s|ms|us)?(/step)?", "#", line) for line in lines]

    assert "Epoch 1/2" in hook_run.stdout and "val_loss" in hook_run.stdout
    assert shape(hook_run.stdout) == shape(keras_run.stdout)


def test_remote_monitor_posts_the_same_epoch_logs():
    pytest.importorskip("requests")
    posted: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            posted.append(json.loads(body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        root = f"http://127.0.0.1:{server.server_port}"
        make = lambda: [callbacks.RemoteMonitor(root=root, send_as_json=True)]  # noqa: E731
        fit_keras_posts = both(make, epochs=2)
    finally:
        server.shutdown()
        server.server_close()
    assert fit_keras_posts
    keras_posts, hook_posts = posted[:2], posted[2:]
    assert [p["epoch"] for p in hook_posts] == [0, 1]
    for k_post, h_post in zip(keras_posts, hook_posts):
        assert sorted(k_post) == sorted(h_post)
        for key in k_post:
            assert h_post[key] == pytest.approx(k_post[key], rel=1e-4)


def test_a_user_callback_in_the_keras_guide_style_stops_the_run():
    class StopAtLoss(callbacks.Callback):
        """The Keras guide's pattern: ``self.model.stop_training = True`` on a val metric."""

        def on_epoch_end(self, epoch, logs=None):
            if logs["val_loss"] < 0.3:
                self.model.stop_training = True
                self.stopped = epoch

    keras_run, hook_run = both(lambda: [StopAtLoss()], epochs=30)
    assert keras_run.callbacks[0].stopped == hook_run.callbacks[0].stopped < 29
    assert hook_run.runner.epoch == hook_run.callbacks[0].stopped + 1


@pytest.mark.parametrize(("make", "names"), [
    (lambda tmp: callbacks.ModelCheckpoint(str(tmp / "m.keras")), "CheckpointHook"),
    (lambda tmp: callbacks.BackupAndRestore(str(tmp / "backup")), "resume='auto'"),
    (lambda tmp: callbacks.TensorBoard(str(tmp / "tb")), "TensorboardLoggerHook"),
    (lambda tmp: callbacks.SwapEMAWeights(), "EMAHook"),
], ids=["ModelCheckpoint", "BackupAndRestore", "TensorBoard", "SwapEMAWeights"])
def test_callbacks_that_need_keras_saving_are_refused_with_the_hookline_equivalent(
        tmp_path, make, names):
    with pytest.raises(ConfigError, match=re.escape(names)) as info:
        fit_hookline(lambda: [make(tmp_path)], epochs=1, work_dir=tmp_path)
    assert "cannot run in a hookline Runner" in str(info.value)


def test_a_config_names_keras_callbacks_by_import_path(tmp_path):
    stop = HOOKS.build({"type": "keras.callbacks.EarlyStopping", "monitor": "val_loss",
                        "patience": 0, "min_delta": 0.5})
    assert isinstance(stop, callbacks.EarlyStopping)
    run = fit_hookline(lambda: [{"type": "keras.callbacks.EarlyStopping", "monitor": "val_loss",
                                 "patience": 0, "min_delta": 0.5}], epochs=5, work_dir=tmp_path)
    assert run.runner.epoch == 2  # epoch 0 sets the best; epoch 1 does not beat it by 0.5
    with pytest.raises(ConfigError, match="did you mean 'patience'"):
        HOOKS.build({"type": "keras.callbacks.EarlyStopping", "patiense": 1})


def test_a_class_deriving_from_both_callback_classes_is_a_keras_callback_hook(tmp_path):
    """Mixing keras.callbacks.Callback into hookline's KerasCallback used to crash on
    ``self.params = None`` (a property without a setter)."""
    class Both(KerasCallback, callbacks.Callback):
        def __init__(self):
            callbacks.Callback.__init__(self)
            self.losses = []

        def on_epoch_end(self, epoch, logs=None):
            self.losses.append(logs["loss"])

    run = fit_hookline(lambda: [Both()], epochs=2, work_dir=tmp_path)
    (both_cb,) = run.callbacks[:1]
    assert len(both_cb.losses) == 2 and both_cb.params == {"epochs": 2, "steps": 3}
