"""The Keras bridge with plain objects that have Keras's callback methods (no Keras needed):
registration, the shared logs, train metrics, stopping, resume, and what is refused."""

from __future__ import annotations

import doctest
import subprocess
import sys
import textwrap

import pytest
import torch

import hookline.integrations
import hookline.integrations.keras
import hookline.integrations.keras_history
import hookline.integrations.keras_logs
import hookline.integrations.keras_model
import hookline.integrations.keras_state
from hookline import HookError, Runner
from hookline.core import ConfigError
from hookline.engine.hook_adapters import find_adapter
from hookline.integrations import _detect
from hookline.integrations.keras import KerasCallbackHook
from hookline.integrations.keras_logs import KerasLogBook

from ..hooks._toy import make_runner, one_thread  # noqa: F401  (an autouse fixture)


class Recorder:
    """A duck-typed Keras callback: set_model / set_params and every method, recording calls."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.model = self.params = None

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def __getattr__(self, name):
        if not name.startswith("on_"):
            raise AttributeError(name)

        def record(*args):
            logs = args[-1] if args else None
            self.calls.append((name, *args[:-1], dict(logs) if logs is not None else None))
        return record


@pytest.mark.parametrize("module", [hookline.integrations, _detect,
                                    hookline.integrations.keras, hookline.integrations.keras_logs,
                                    hookline.integrations.keras_model,
                                    hookline.integrations.keras_history,
                                    hookline.integrations.keras_state])
def test_docstring_examples(module):
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


def test_a_keras_like_object_is_wrapped_and_called_in_fit_order(tmp_path):
    class Calls:
        def __init__(self):
            self.names = []

        def on_train_begin(self, logs=None):
            self.names.append("train_begin")

        def on_epoch_begin(self, epoch, logs=None):
            self.names.append(f"epoch_begin {epoch}")

        def on_epoch_end(self, epoch, logs=None):
            self.names.append(f"epoch_end {epoch} {sorted(logs)}")

        def on_test_end(self, logs=None):
            self.names.append(f"test_end {sorted(logs)}")

        def on_train_end(self, logs=None):
            self.names.append(f"train_end {sorted(logs)}")

    calls = Calls()
    assert find_adapter(calls).name == "keras"
    runner = make_runner(tmp_path, hooks=[calls], max_epochs=2)
    (hook,) = [h for h in runner.hooks.hooks if isinstance(h, KerasCallbackHook)]
    assert hook.callback is calls and hook.state_key == "keras:Calls"
    runner.train()
    epoch = ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert calls.names == ["train_begin", "epoch_begin 0", "test_end ['accuracy', 'loss']",
                           f"epoch_end 0 {epoch}", "epoch_begin 1",
                           "test_end ['accuracy', 'loss']", f"epoch_end 1 {epoch}",
                           f"train_end {epoch}"]


def test_batch_logs_are_batch_size_weighted_running_means_reset_each_epoch(tmp_path):
    seen: list[tuple[int, int, dict]] = []

    def epoch_of(callback):
        return callback.model.module.training

    class Batches:
        def on_train_batch_end(self, batch, logs=None):
            seen.append((epoch_of(self), batch, dict(logs)))

    data = torch.utils.data.TensorDataset(torch.randn(20, 6), torch.randint(0, 2, (20,)))
    losses: list[tuple[float, int]] = []
    runner = make_runner(tmp_path, hooks=[Batches()], max_epochs=2, shuffle=False, data=data,
                         val=False)
    runner.on("after_train_iter", lambda r, batch_idx, data_batch, outputs: losses.append(
        (outputs["loss"].item(), len(data_batch[1]))))
    runner.train()
    assert [s[1] for s in seen] == [0, 1, 2, 0, 1, 2]  # batches of 8, 8 and 4 per epoch
    for epoch in range(2):
        part = losses[3 * epoch: 3 * epoch + 3]
        for i in range(3):
            total = sum(loss * n for loss, n in part[: i + 1])
            count = sum(n for _, n in part[: i + 1])
            assert seen[3 * epoch + i][2]["loss"] == pytest.approx(total / count, rel=1e-6)


def test_train_metrics_are_computed_on_training_batches_under_their_names(tmp_path):
    epochs: list[dict] = []

    class Epochs:
        def on_epoch_end(self, epoch, logs=None):
            epochs.append(dict(logs))

    correct: list[tuple[float, int]] = []
    runner = make_runner(tmp_path, hooks=[Epochs()], max_epochs=1, shuffle=False)
    runner.model.register_forward_hook(lambda m, a, out: correct.append(
        ((out.argmax(1) == runner.outputs_targets).float().sum().item(), len(out)))
        if m.training else None)
    runner.on("before_train_iter", lambda r, batch_idx, data_batch: setattr(
        r, "outputs_targets", data_batch[1]))
    runner.train()
    assert sorted(epochs[0]) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    expected = sum(c for c, _ in correct) / sum(n for _, n in correct)
    assert epochs[0]["accuracy"] == pytest.approx(expected)


def test_one_logs_object_per_step_shared_by_the_callbacks_in_order(tmp_path):
    class AddsLr:
        def on_epoch_end(self, epoch, logs=None):
            logs["learning_rate"] = self.model.optimizer.learning_rate

    class Reads:
        keys: list = []

        def on_epoch_end(self, epoch, logs=None):
            self.keys.append(sorted(logs))

    reads = Reads()
    make_runner(tmp_path, hooks=[AddsLr(), reads], max_epochs=1).train()
    assert reads.keys == [["accuracy", "learning_rate", "loss", "val_accuracy", "val_loss"]]
    assert len([h for h in make_runner(tmp_path / "b", hooks=[AddsLr(), reads]).hooks.hooks
                if isinstance(h, KerasLogBook)]) == 1


def test_the_model_facade_stops_the_run_and_sets_the_learning_rate(tmp_path):
    class Controls:
        def on_epoch_begin(self, epoch, logs=None):
            self.model.optimizer.learning_rate = 0.01 * (epoch + 1)

        def on_train_batch_end(self, batch, logs=None):
            if batch == 2 and self.params["epochs"] == 5:
                self.model.stop_training = True

    runner = make_runner(tmp_path, hooks=[Controls()], max_epochs=5)
    runner.train()
    assert runner.iter == 3 and runner.optimizer.param_groups[0]["lr"] == 0.01


def test_optimizer_iterations_count_every_training_step_with_sgd_too(tmp_path):
    """A warmup callback reads ``optimizer.iterations``: 0, 1, 2 ... as in ``keras.Model.fit``,
    also for SGD, whose torch state keeps no step count (and over accumulated batches)."""
    class Warmup:
        def __init__(self):
            self.seen = []

        def on_train_batch_begin(self, batch, logs=None):
            self.seen.append(int(self.model.optimizer.iterations))

    plain, accumulated = Warmup(), Warmup()
    make_runner(tmp_path / "a", hooks=[plain], max_epochs=2).train()
    runner = make_runner(tmp_path / "b", hooks=[accumulated], max_epochs=2)
    runner.optim_wrapper.accumulative_counts = 2  # the optimizer steps every other batch
    runner.train()
    assert plain.seen == list(range(12)) and accumulated.seen == list(range(12))


def test_a_failing_callback_is_named_with_its_keras_method(tmp_path):
    class NeedsValAcc:
        def on_epoch_end(self, epoch, logs=None):
            return logs["val_acc"]  # Keras 2's name; Keras 3 logs val_accuracy

    runner = make_runner(tmp_path, hooks=[NeedsValAcc()], max_epochs=1)
    with pytest.raises(HookError, match=r"NeedsValAcc failed at on_epoch_end: KeyError: 'val_acc'"):
        runner.train()


def test_get_and_set_weights_cover_parameters_and_buffers(tmp_path):
    class Snapshot:
        def on_train_begin(self, logs=None):
            self.start = self.model.get_weights()

        def on_train_end(self, logs=None):
            self.model.set_weights(self.start)

    snap = Snapshot()
    runner = make_runner(tmp_path, hooks=[snap], max_epochs=1)
    before = {k: v.clone() for k, v in runner.model.state_dict().items()}
    runner.train()
    assert len(snap.start) == len(before)  # weights, biases, BatchNorm statistics
    assert all(torch.equal(before[k], v) for k, v in runner.model.state_dict().items())
    with pytest.raises(HookError) as info:
        make_runner(tmp_path / "b", hooks=[type("Bad", (), {
            "on_train_begin": lambda self, logs=None: self.model.set_weights([])})()]).train()
    assert "set_weights got 0 arrays" in str(info.value.__cause__)


def test_keras_model_methods_without_meaning_name_the_hookline_way(tmp_path):
    class Saves:
        def on_epoch_end(self, epoch, logs=None):
            self.model.save("model.keras")

    with pytest.raises(HookError) as info:
        make_runner(tmp_path, hooks=[Saves()], max_epochs=1).train()
    assert isinstance(info.value.__cause__, ConfigError)
    assert "CheckpointHook" in str(info.value.__cause__)

    class Layers:
        def on_train_begin(self, logs=None):
            self.model.layers  # noqa: B018

    with pytest.raises(HookError, match="has no attribute 'layers'"):
        make_runner(tmp_path / "b", hooks=[Layers()], max_epochs=1).train()


def test_iteration_based_runs_are_one_epoch(tmp_path):
    recorder = Recorder()
    runner = make_runner(tmp_path, hooks=[recorder], max_iters=8, val_interval=4)
    runner.train()
    assert recorder.params == {"verbose": "auto", "epochs": 1, "steps": 8}
    ends = [c for c in recorder.calls if c[0] == "on_epoch_end"]
    assert [(c[1], sorted(c[2])) for c in ends] == [
        (0, ["accuracy", "loss", "val_accuracy", "val_loss"])]
    assert [c[0] for c in recorder.calls].count("on_test_end") == 2


def test_resume_mid_epoch_reports_the_same_epoch_means(tmp_path):
    class Epochs:
        def __init__(self):
            self.logs = {}

        def on_epoch_end(self, epoch, logs=None):
            self.logs[epoch] = dict(logs)

    whole = Epochs()
    make_runner(tmp_path / "whole", hooks=[whole], shuffle=False).train()

    class Crash:
        def on_train_batch_end(self, batch, logs=None):
            if batch == 3 and not hasattr(self, "done"):
                self.done = True
                raise RuntimeError("power cut")

    checkpoint = {"type": "CheckpointHook", "interval": 2, "by_epoch": False}
    second = Epochs()
    with pytest.raises(HookError):
        make_runner(tmp_path / "cut", hooks=[Epochs(), Crash()], shuffle=False,
                    checkpoint=checkpoint).train()
    make_runner(tmp_path / "cut", hooks=[second], shuffle=False, checkpoint=checkpoint,
                resume="auto").train()
    assert sorted(second.logs) == [0, 1, 2]
    for epoch, logs in second.logs.items():
        assert logs == pytest.approx(whole.logs[epoch], rel=1e-5)


def test_reading_no_logs_adds_no_host_sync(tmp_path, monkeypatch):
    class Quiet:
        def on_train_batch_end(self, batch, logs=None):
            self.last = logs  # kept, never read

    runner = make_runner(tmp_path, hooks=[Quiet()], max_epochs=1, val=False,
                         default_hooks={"timer": None, "param_scheduler": None})
    syncs: list[str] = []
    in_hooks = []  # counted while hooks run (the DataLoader's own .tolist() is not the bridge's)
    for name in ("item", "__float__", "__bool__", "tolist", "cpu"):
        original = getattr(torch.Tensor, name)
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _o=original, _n=name, **k: (
            in_hooks and syncs.append(_n), _o(self, *a, **k))[1])
    call = runner.hooks.call

    def counted(*args, **kwargs):
        in_hooks.append(True)
        try:
            return call(*args, **kwargs)
        finally:
            in_hooks.pop()

    monkeypatch.setattr(runner.hooks, "call", counted)
    runner.train()
    monkeypatch.undo()
    assert syncs == []


def test_the_same_callback_twice_and_unknown_objects_are_refused(tmp_path):
    class Once:
        def on_epoch_end(self, epoch, logs=None):
            pass

    once = Once()
    runner = make_runner(tmp_path, hooks=[once])
    with pytest.raises(ConfigError, match="already registered"):
        runner.register_hook(once)
    with pytest.raises(ConfigError, match="or a Keras or Lightning callback"):
        Runner(torch.nn.Linear(2, 2), hooks=[object()])


def test_the_engine_finds_the_adapters_by_name_and_refuses_callbacks_without_them(tmp_path):
    """Blocking hookline.integrations leaves the engine working; a callback is then one
    ConfigError (no adapter takes it)."""
    code = textwrap.dedent(f"""
        import sys
        sys.modules["hookline.integrations"] = None
        import torch
        from hookline.core import ConfigError
        from hookline.engine import Runner

        class Callback:
            def on_epoch_end(self, epoch, logs=None):
                pass

        try:
            Runner(torch.nn.Linear(2, 2), hooks=[Callback()], work_dir={str(tmp_path)!r},
                   default_hooks={{"param_scheduler": None, "timer": None, "logger": None,
                                   "checkpoint": None, "sampler_seed": None, "progress": None}})
        except ConfigError as exc:
            print("ConfigError:", exc)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "ConfigError: hooks[0] must be a hookline Hook" in result.stdout
