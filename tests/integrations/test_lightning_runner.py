"""Lightning callbacks in a hookline Runner, compared with a real ``lightning.Trainer.fit`` on CPU."""

from __future__ import annotations

import doctest
import itertools
import re

import pytest
import torch

from hookline import HOOKS, HookError
from hookline.core import ConfigError
from hookline.integrations import lightning_runner as runner_module
from hookline.integrations import lightning_trainer as trainer_module

from ._lightning_twins import both, fit_hookline, fit_lightning, one_thread, pl  # noqa: F401

callbacks = pl.callbacks


class Recorder(pl.Callback):
    """Records the name of every hook Lightning (or hookline) calls on it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattribute__(self, name):
        if name.startswith("on_") or name in ("setup", "teardown"):
            calls = object.__getattribute__(self, "calls")
            return lambda *args, **kwargs: calls.append(name)
        return object.__getattribute__(self, name)


class OwnMethods(pl.Callback):
    """Overrides every hook (so the adapter dispatches them all) and records each call."""

    def __init__(self) -> None:
        self.calls: list[str] = []


for _name in [n for n in vars(pl.Callback) if n.startswith("on_") or n in ("setup", "teardown")]:
    setattr(OwnMethods, _name, lambda self, *a, _n=_name, **k: self.calls.append(_n))


def test_docstring_examples():
    for module in (runner_module, trainer_module):
        assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


def test_every_hook_is_called_in_the_order_trainer_fit_calls_it():
    lightning_run = fit_lightning(lambda: [Recorder()], epochs=2)
    hookline_run = fit_hookline(lambda: [OwnMethods()], epochs=2)
    optimizer_hooks = {"on_before_zero_grad", "on_before_backward", "on_after_backward",
                       "on_before_optimizer_step"}
    expected = [c for c in lightning_run.callbacks[0].calls if c not in optimizer_hooks]
    got = hookline_run.callbacks[0].calls
    assert [c for c in got if c not in optimizer_hooks] == expected
    # per batch: Lightning zeroes the gradients before the step, hookline right after it
    per_batch = [c for c in got if c in optimizer_hooks or c == "on_train_batch_end"]
    assert per_batch[:5] == ["on_before_backward", "on_after_backward",
                             "on_before_optimizer_step", "on_before_zero_grad",
                             "on_train_batch_end"]
    assert sum(1 for c in got if c == "on_before_optimizer_step") == 2 * 3


def test_early_stopping_stops_the_run_at_the_epoch_trainer_fit_stops():
    def make():
        return [callbacks.EarlyStopping(monitor="val_loss", patience=1, min_delta=0.01)]

    lightning_run, hookline_run = both(make, epochs=15)
    l_stop, h_stop = lightning_run.of(callbacks.EarlyStopping), hookline_run.of(
        callbacks.EarlyStopping)
    assert 0 < l_stop.stopped_epoch < 14
    assert h_stop.stopped_epoch == l_stop.stopped_epoch
    assert h_stop.wait_count == l_stop.wait_count
    assert float(h_stop.best_score) == pytest.approx(float(l_stop.best_score), rel=1e-4)
    assert hookline_run.epochs_done == lightning_run.epochs_done
    torch.testing.assert_close(hookline_run.net.weight, lightning_run.net.weight)


def test_a_user_callback_observes_and_stops_the_run():
    class StopOnAccuracy(pl.Callback):
        def __init__(self):
            self.seen: list[tuple[int, float, int]] = []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            assert isinstance(outputs["loss"], torch.Tensor) and len(batch) == 2

        def on_validation_epoch_end(self, trainer, pl_module):
            accuracy = float(trainer.callback_metrics["val_accuracy"])
            self.seen.append((trainer.current_epoch, round(accuracy, 4), trainer.global_step))
            if accuracy >= 0.8:
                trainer.should_stop = True

    lightning_run, hookline_run = both(lambda: [StopOnAccuracy()], epochs=10, noise=0.0)
    assert hookline_run.callbacks[0].seen == lightning_run.callbacks[0].seen
    assert len(hookline_run.callbacks[0].seen) < 10
    assert hookline_run.epochs_done == lightning_run.epochs_done


def test_the_module_mode_and_the_loss_are_what_trainer_fit_gives_callbacks():
    """``pl_module.training`` is False while validating, so the usual "eval, sample, back to
    train if it was training" idiom leaves the model in eval mode; the training loss comes
    detached (a callback may call ``.numpy()`` on it and keeps no graph)."""
    class SampleAndCollect(pl.Callback):
        def __init__(self):
            self.modes: list[tuple[str, bool]] = []
            self.losses: list[float] = []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.modes.append(("train", pl_module.training))
            self.losses.append(float(outputs["loss"].cpu().numpy()))

        def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx,
                                    dataloader_idx=0):
            was_training = pl_module.training
            self.modes.append(("val", was_training))
            pl_module.eval()
            with torch.no_grad():
                next(pl_module.children())(batch[0][:2])  # the network (TwinModule has no forward)
            if was_training:
                pl_module.train()

        def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx,
                                      dataloader_idx=0):
            self.modes.append(("val start", any(m.training for m in pl_module.modules())))

    lightning_run, hookline_run = both(lambda: [SampleAndCollect()], epochs=2)
    got, expected = hookline_run.callbacks[0], lightning_run.callbacks[0]
    assert got.modes == expected.modes
    assert ("val", False) in got.modes and ("val start", True) not in got.modes
    assert got.losses == pytest.approx(expected.losses, rel=1e-5)


def test_learning_rate_monitor_records_the_same_rates(tmp_path):
    def make():
        return [callbacks.LearningRateMonitor(logging_interval="epoch")]

    lightning_run = fit_lightning(make, epochs=4, step_lr=1, logger=True, work_dir=tmp_path / "l")
    hookline_run = fit_hookline(make, epochs=4, step_lr=1, work_dir=tmp_path / "h")
    l_lrs = lightning_run.of(callbacks.LearningRateMonitor).lrs
    assert hookline_run.of(callbacks.LearningRateMonitor).lrs == l_lrs == {
        "lr-SGD": [0.5, 0.25, 0.125, 0.0625]}
    scalars = (tmp_path / "h").rglob("scalars.json")
    assert any("lr-SGD" in path.read_text() for path in scalars)  # the run's visualizer has them


def test_timer_measures_the_run_and_stops_it_when_its_time_is_up():
    timer_run = fit_hookline(lambda: [callbacks.Timer(duration={"days": 1})], epochs=2)
    timer = timer_run.of(callbacks.Timer)
    assert 0 < timer.time_elapsed("train") < 60 and timer_run.epochs_done == 2
    assert timer_run.runner.hooks.hooks  # state goes into checkpoints under Lightning's key
    state = {h.state_key: h.state_dict() for h in timer_run.runner.hooks.hooks}
    assert state["lightning:Timer"]["time_elapsed"]["train"] > 0

    lightning_run, hookline_run = both(
        lambda: [callbacks.Timer(duration={"seconds": 0}, interval="epoch")], epochs=3)
    assert hookline_run.epochs_done == lightning_run.epochs_done == 0  # stopped in on_fit_start


def test_lambda_callback_and_gradient_accumulation_scheduler():
    runs: list[list[int]] = []  # per run: the epoch of every optimizer step

    def make():
        steps: list[int] = []
        runs.append(steps)
        return [callbacks.GradientAccumulationScheduler({1: 2}),
                callbacks.LambdaCallback(on_before_optimizer_step=lambda trainer, module, opt:
                                         steps.append(trainer.current_epoch))]

    _, hookline_run = both(make, epochs=3)
    for steps in runs:  # 3 batches an epoch: 3 steps, then 2 (accumulating 2 batches, then 1)
        assert [len(list(group)) for _, group in itertools.groupby(steps)] == [3, 2, 2]
    assert hookline_run.runner.optim_wrapper.accumulative_counts == 2


def test_callback_state_goes_into_hookline_checkpoints_and_back(tmp_path):
    stop = callbacks.EarlyStopping(monitor="val_loss", patience=3)
    run = fit_hookline(lambda: [stop], epochs=2, work_dir=tmp_path,
                       default_hooks={"logger": None, "progress": None})
    assert (tmp_path / "epoch_2.pth").is_file()
    resumed_stop = callbacks.EarlyStopping(monitor="val_loss", patience=3)
    resumed = fit_hookline(lambda: [resumed_stop], epochs=2, work_dir=tmp_path,
                           default_hooks={"logger": None, "progress": None}, resume="auto")
    assert resumed.runner.epoch == 2
    assert float(resumed_stop.best_score) == float(stop.best_score)
    assert resumed_stop.wait_count == stop.wait_count
    assert run.runner.epoch == 2


@pytest.mark.parametrize(("make", "hint"), [
    (lambda: callbacks.ModelCheckpoint(), "CheckpointHook"),
    (lambda: callbacks.TQDMProgressBar(), "ProgressBarHook"),
    (lambda: callbacks.StochasticWeightAveraging(swa_lrs=0.1), "EMAHook"),
    (lambda: callbacks.RichModelSummary(), "hookline inspect"),
], ids=["ModelCheckpoint", "TQDMProgressBar", "StochasticWeightAveraging", "RichModelSummary"])
def test_callbacks_that_need_lightning_internals_are_refused(make, hint):
    with pytest.raises(ConfigError, match=re.escape(hint)) as info:
        fit_hookline(lambda: [make()], epochs=1)
    assert "cannot run in a hookline Runner" in str(info.value)


def test_a_config_names_lightning_callbacks_by_import_path():
    built = HOOKS.build({"type": "lightning.pytorch.callbacks.EarlyStopping",
                         "monitor": "val_loss"})
    assert isinstance(built, callbacks.EarlyStopping)
    run = fit_hookline(lambda: [{"type": "lightning.pytorch.callbacks.EarlyStopping",
                                 "monitor": "val_loss", "patience": 0, "min_delta": 1.0}],
                       epochs=5)
    assert run.epochs_done == 2


def test_checkpoint_and_exception_hooks_get_hooklines_objects(tmp_path):
    class Watch(pl.Callback):
        def __init__(self):
            self.saved: list = []
            self.failed: list = []

        def on_save_checkpoint(self, trainer, pl_module, checkpoint):
            self.saved.append(sorted(checkpoint)[:3])

        def on_exception(self, trainer, pl_module, exception):
            self.failed.append(str(exception))

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if trainer.current_epoch == 1 and batch_idx == 1:
                raise RuntimeError("boom")

    watch = Watch()
    with pytest.raises(HookError, match="on_train_batch_end|after_train_iter"):
        fit_hookline(lambda: [watch], epochs=3, work_dir=tmp_path,
                     default_hooks={"logger": None, "progress": None})
    assert watch.saved == [["hooks", "meta", "optimizer"]]  # epoch_1.pth, before the failure
    assert watch.failed == ["boom"]
