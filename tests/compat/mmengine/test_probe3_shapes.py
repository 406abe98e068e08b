"""MMEngine's shapes that published OpenMMLab hooks read, each with the hook's own code pattern in
a real Runner: ``runner.param_schedulers`` (schedulers carrying ``by_epoch``), the message hub's
long scalar history, ``runner._has_loaded``, ``Evaluator.metrics`` as a list, IterTimerHook's
state names and ``runner.log_processor``, ``mmengine.version`` / ``get_git_hash``,
``mmcv.transforms.Compose``, and the val/test log lines."""

from __future__ import annotations

import shutil
import subprocess
import time
import warnings

import pytest
import torch
from torch.utils.data import DataLoader

from hookline.compat.mmcv.transforms import TRANSFORMS, BaseTransform, Compose
from hookline.compat.mmengine.hooks import Hook, IterTimerHook
from hookline.compat.mmengine.utils import get_git_hash
from hookline.compat.mmengine.version import __version__, version_info
from hookline.engine import history_buffer
from hookline.engine.message_hub import MessageHub

from ..conftest import make_runner, toy_data


# -- 1. runner.param_schedulers: a list of schedulers, each with by_epoch -------------------------
class MMEngineParamSchedulerHook(Hook):
    """MMEngine's ParamSchedulerHook stages, as its file has them (steps by ``by_epoch``)."""

    priority = "LOW"

    @staticmethod
    def _step(runner, wanted):
        def step(param_schedulers):
            assert isinstance(param_schedulers, list)
            for scheduler in param_schedulers:
                if scheduler.by_epoch == wanted:
                    scheduler.step()
        if isinstance(runner.param_schedulers, list):
            step(runner.param_schedulers)
        elif isinstance(runner.param_schedulers, dict):
            for param_schedulers in runner.param_schedulers.values():
                step(param_schedulers)
        else:
            raise TypeError(f"runner.param_schedulers: {runner.param_schedulers}")

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self._step(runner, False)

    def after_train_epoch(self, runner):
        self._step(runner, True)


class LrRecord(Hook):
    def __init__(self):
        self.lrs = []

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self.lrs.append(round(runner.optimizer.param_groups[0]["lr"], 6))


SCHEDULES = [
    [{"type": "LinearLR", "start_factor": 0.1, "total_iters": 4, "by_epoch": False},
     {"type": "MultiStepLR", "milestones": [1], "gamma": 0.5}],
    [{"type": "mmengine.LinearLR", "start_factor": 0.1, "begin": 0, "end": 4, "by_epoch": False},
     {"type": "mmengine.MultiStepLR", "milestones": [1], "gamma": 0.5, "by_epoch": True}],
]


@pytest.mark.parametrize("schedule", SCHEDULES, ids=["torch", "mmengine"])
def test_mmengines_param_scheduler_hook_code_steps_the_runners_schedulers(tmp_path, schedule):
    """Each scheduler carries the config's by_epoch (an MMEngine scheduler built with
    by_epoch=False too), so MMEngine's hook code steps them as hookline's hook does."""
    runs = {}
    for name, hook in (("own", {"type": "ParamSchedulerHook"}), ("mmengine", None)):
        record = LrRecord()
        hooks = [record] + ([MMEngineParamSchedulerHook()] if hook is None else [])
        runner = make_runner(tmp_path / name, hooks=hooks, param_scheduler=schedule, max_epochs=3,
                             default_hooks={"param_scheduler": hook})
        assert [s.by_epoch for s in runner.param_schedulers] == [False, True]
        runner.train()
        runs[name] = record.lrs
    assert runs["mmengine"] == runs["own"]
    assert runs["own"][0] == 0.01 and runs["own"][1] > 0.03  # per iteration, then ...
    assert runs["own"][4] == 0.1
    assert runs["own"][8] == 0.05  # ... halved after the first epoch


class ValMetricStepHook(Hook):
    """mmagic's ReduceLRSchedulerHook, val_metric mode: every scheduler steps after validation."""

    def after_val_epoch(self, runner, metrics=None):
        assert isinstance(runner.param_schedulers, list)
        for scheduler in runner.param_schedulers:
            scheduler.step()


def test_a_hook_stepping_every_scheduler_after_validation(tmp_path):
    record = LrRecord()
    runner = make_runner(tmp_path, hooks=[record, ValMetricStepHook()],
                         param_scheduler=[{"type": "StepLR", "step_size": 1, "gamma": 0.5}],
                         val_dataloader=DataLoader(toy_data(16, 1), batch_size=8),
                         default_hooks={"param_scheduler": None}, max_epochs=3)
    runner.train()
    assert record.lrs[::8] == [0.1, 0.05, 0.025]


def test_resume_stays_exact_and_old_checkpoints_keep_the_configs_by_epoch(tmp_path):
    schedule = SCHEDULES[0]
    full = LrRecord()
    make_runner(tmp_path / "full", hooks=[full], param_scheduler=schedule, max_epochs=3).train()
    first = make_runner(tmp_path / "cut", param_scheduler=schedule, max_epochs=1)
    first.train()
    path = first.save_checkpoint("cut.pth")
    checkpoint = torch.load(path, weights_only=False)
    assert [s["by_epoch"] for s in checkpoint["param_schedulers"]] == [False, True]
    for state in checkpoint["param_schedulers"]:  # as written before schedulers carried it
        del state["by_epoch"]
    torch.save(checkpoint, path)
    resumed = LrRecord()
    runner = make_runner(tmp_path / "cut", hooks=[resumed], param_scheduler=schedule,
                         max_epochs=3, resume=str(path))
    runner.train()
    assert [s.by_epoch for s in runner.param_schedulers] == [False, True]
    assert resumed.lrs == full.lrs[8:]


# -- 2. the message hub's long scalar history ---------------------------------------------------
class BenchmarkHook(Hook):
    """mmdet3d's BenchmarkHook: the mean of train/time past the first 50 iterations."""

    def __init__(self):
        self.speeds = []

    def after_train_epoch(self, runner):
        max_iter_num = len(runner.train_dataloader)
        self.speeds.append(runner.message_hub.get_scalar("train/time").mean(max_iter_num - 50))


class Times(Hook):
    priority = "LOWEST"

    def __init__(self):
        self.times = []

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self.times.append(runner.message_hub.get_scalar("train/time").current())


def test_benchmark_hooks_window_averages_the_iterations_it_asks_for(tmp_path):
    bench, times = BenchmarkHook(), Times()
    loader = DataLoader(toy_data(800), batch_size=8)  # 100 iterations: mean(50) of 50..99
    runner = make_runner(tmp_path, hooks=[bench, times], train_dataloader=loader, max_epochs=1)
    runner.train()
    assert bench.speeds == [pytest.approx(sum(times.times[50:]) / 50)]
    assert len(runner.message_hub.get_scalar("train/time")) == 100


def test_a_tensor_window_longer_than_kept_warns_once(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1)
    runner.train()  # 8 iterations of tensor losses; the hub keeps 10 by default
    hub = runner.message_hub
    for value in range(20):
        hub.update_scalar("train/extra", torch.tensor(float(value)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert hub.get_scalar("train/extra").mean(15) == pytest.approx(14.5)  # the 10 kept
        hub.get_scalar("train/extra").mean(15)
    assert len(caught) == 1 and "'train/extra'" in str(caught[0].message)
    assert "10 kept of 20 recorded" in str(caught[0].message)


def test_the_long_history_is_bounded(monkeypatch):
    monkeypatch.setattr(history_buffer, "LONG_HISTORY", 50)
    hub = MessageHub()
    for value in range(1000):
        hub.update_scalar("train/time", float(value))
    buffer = hub.get_scalar("train/time")
    assert len(buffer) == 50 and buffer.mean(1000) == pytest.approx(974.5)
    assert len(buffer._long) < 100  # noqa: SLF001  (dropped in halves, never more than 2x)


# -- 3. runner._has_loaded ----------------------------------------------------------------------
class AutoAnchor(Hook):
    """mmyolo's YOLOAutoAnchorHook test: compute anchors only when nothing was loaded."""

    def __init__(self):
        self.seen = []

    def before_train(self, runner):
        self.seen.append(runner._has_loaded)  # noqa: SLF001  (MMEngine's flag, read by the hook)


def test_has_loaded_is_false_until_a_checkpoint_loads(tmp_path):
    first = make_runner(tmp_path / "a", max_epochs=1)
    assert first._has_loaded is False  # noqa: SLF001
    first.train()
    path = first.save_checkpoint("one.pth")
    fresh, loaded, resumed = AutoAnchor(), AutoAnchor(), AutoAnchor()
    make_runner(tmp_path / "b", hooks=[fresh], max_epochs=1).train()
    make_runner(tmp_path / "c", hooks=[loaded], max_epochs=1, load_from=str(path)).train()
    make_runner(tmp_path / "a", hooks=[resumed], max_epochs=2, resume=str(path)).train()
    assert (fresh.seen, loaded.seen, resumed.seen) == ([False], [True], [True])
    later = make_runner(tmp_path / "d", max_epochs=1)
    later.load_checkpoint(path)
    assert later._has_loaded is True  # noqa: SLF001


# -- 4. Evaluator.metrics is a list -------------------------------------------------------------
class FlaggedAccuracy:
    flag = False

    def __call__(self, preds, targets):
        return float((preds.argmax(1) == targets).float().mean()) + (10.0 if self.flag else 0.0)


class FlagHook(Hook):
    """GaussTR's CustomHook: sets a flag on ``runner.val_evaluator.metrics[0]``."""

    def before_train_epoch(self, runner):
        if runner.epoch >= 1:
            runner.val_evaluator.metrics[0].flag = True


def test_a_hook_indexes_the_evaluators_metrics(tmp_path):
    metric = FlaggedAccuracy()
    runner = make_runner(tmp_path, hooks=[FlagHook()], metrics={"acc": metric},
                         val_dataloader=DataLoader(toy_data(16, 1), batch_size=8))
    assert runner.val_evaluator.metrics == [metric]
    assert runner.val_evaluator.named_metrics == {"acc": metric}
    runner.train()
    assert metric.flag and runner.val_loop.last_metrics["acc"] >= 10.0


# -- 5. IterTimerHook's state names and runner.log_processor -------------------------------------
class WindowTimer(IterTimerHook):
    """mmagic's IterTimerHook: overrides ``_after_iter`` with MMEngine's state names."""

    def _after_iter(self, runner, batch_idx, data_batch=None, outputs=None, mode="train"):
        message_hub = runner.message_hub
        message_hub.update_scalar(f"{mode}/time", time.time() - self.t)
        self.t = time.time()
        window_size = runner.log_processor.window_size
        if mode == "train" and self.every_n_inner_iters(batch_idx, window_size):
            iter_time = message_hub.get_scalar(f"{mode}/time").mean(window_size)
            self.time_sec_tot += iter_time * window_size
            time_sec_avg = self.time_sec_tot / (runner.iter - self.start_iter + 1)
            runner.message_hub.update_info("eta", time_sec_avg * (runner.max_iters - runner.iter - 1))


class SlowStep(Hook):
    priority = "VERY_HIGH"  # before the timer's after_iter: the sleep is the step's time

    def __init__(self):
        self.data_times = []

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        self.data_times.append(runner.message_hub.get_scalar("train/data_time").current())
        time.sleep(0.01)


def test_a_timer_subclass_overriding_after_iter_keeps_data_time(tmp_path):
    slow = SlowStep()
    runner = make_runner(tmp_path, hooks=[slow], max_epochs=2,
                         default_hooks={"timer": WindowTimer(),
                                        "logger": {"type": "LoggerHook", "interval": 4}})
    assert (runner.log_processor.window_size, runner.log_processor.by_epoch) == (4, True)
    runner.train()
    # each wait is the batch's (a log line's writing may add to one), not the time since the
    # epoch began (what a timer reading another attribute than the subclass's ``t`` gives)
    assert len(slow.data_times) == 16 and sorted(slow.data_times)[8] < 0.005
    assert runner.message_hub.get_info("eta") is not None


def test_log_processor_without_a_logger_has_mmengines_defaults(tmp_path):
    runner = make_runner(tmp_path, max_epochs=None, max_iters=5)
    assert (runner.log_processor.window_size, runner.log_processor.by_epoch) == (10, False)
    assert runner.log_processor.num_digits == 4 and runner.log_processor.custom_cfg == []


# -- 6. mmengine.version and get_git_hash ---------------------------------------------------------
def test_version_module_and_git_hash(tmp_path, monkeypatch):
    assert __version__ + get_git_hash() == __version__ + get_git_hash()  # RuntimeInfoHook's use
    assert version_info == (0, 10, 7)
    if shutil.which("git") is None:
        pytest.skip("needs git")
    monkeypatch.chdir(tmp_path)
    assert get_git_hash() == ""  # outside a repository, as MMEngine
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q"], check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "x"], check=True, env=env)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert get_git_hash() == head and get_git_hash(digits=7) == head[:7]
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert get_git_hash(fallback="unknown") == "unknown"


# -- 7. mmcv.transforms.Compose -------------------------------------------------------------------
class SwitchablePipeline(torch.utils.data.Dataset):
    """A dataset applying its ``pipeline`` to each ``(x, y)`` sample, as mmdet's do."""

    def __init__(self):
        self.data = toy_data(32)
        self.pipeline = None

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        item = self.data[index]
        return self.pipeline(item) if self.pipeline is not None else item


def test_pipeline_switch_hook_pattern_with_compose(tmp_path):
    @TRANSFORMS.register_module(force=True)
    class Ones(BaseTransform):
        def transform(self, results):
            return torch.ones_like(results[0]), results[1]

    class PipelineSwitch(Hook):  # mmdet's PipelineSwitchHook, the switching part
        def __init__(self, switch_epoch, switch_pipeline):
            self.switch_epoch, self.switch_pipeline = switch_epoch, switch_pipeline

        def before_train_epoch(self, runner):
            if runner.epoch == self.switch_epoch:
                runner.train_dataloader.dataset.pipeline = Compose(self.switch_pipeline)

    class Seen(Hook):
        def __init__(self):
            self.means = []

        def before_train_iter(self, runner, batch_idx, data_batch=None):
            self.means.append(round(float(data_batch[0].abs().mean()), 4))

    seen = Seen()
    loader = DataLoader(SwitchablePipeline(), batch_size=8)
    make_runner(tmp_path, train_dataloader=loader,
                hooks=[PipelineSwitch(1, [{"type": "Ones"}, lambda r: r]), seen]).train()
    assert all(v != 1.0 for v in seen.means[:4]) and seen.means[4:] == [1.0] * 4
    with pytest.raises(ImportError, match="mmcv's Resize is not supported by hookline"):
        exec("from hookline.compat.mmcv.transforms import Resize", {})


# -- minor: the val and test log lines follow MMEngine's LogProcessor ----------------------------
def test_val_and_test_log_lines(tmp_path):
    runner = make_runner(tmp_path, val_dataloader=DataLoader(toy_data(16, 1), batch_size=8),
                         test_dataloader=DataLoader(toy_data(16, 2), batch_size=8),
                         default_hooks={"logger": {"type": "LoggerHook", "interval": 4}})
    runner.val()
    runner.train()
    runner.test()
    lines = [line.split(" - INFO - ", 1)[1].split("  ")[0]
             for line in (tmp_path / "log.txt").read_text().splitlines()
             if "(val)" in line or "(test)" in line]
    assert lines == ["Epoch(val) [0][2/2]", "Epoch(val) [1][2/2]", "Epoch(val) [2][2/2]",
                     "Epoch(test) [2/2]"]
