"""Exact resume: a run stopped anywhere and resumed ends bit-identical to one never stopped."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from hookline import Hook, HookError, TrainingInterrupted
from hookline.engine.checkpoint import read_latest

from .toy import Explode, final_state, make_runner

TOY = Path(__file__).with_name("toy.py")
ENV = {**os.environ, "OMP_NUM_THREADS": "1",
       "PYTHONPATH": os.pathsep.join([str(TOY.parent), os.environ.get("PYTHONPATH", "")])}


def assert_same_state(a: dict, b: dict) -> None:
    assert a["iter"] == b["iter"] and a["epoch"] == b["epoch"]
    assert a["model"].keys() == b["model"].keys()
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
    state_a, state_b = a["optimizer"]["state"], b["optimizer"]["state"]
    assert state_a.keys() == state_b.keys()
    for index in state_a:
        for name, value in state_a[index].items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(state_b[index][name]))
    assert a["optimizer"]["param_groups"] == b["optimizer"]["param_groups"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    runner = make_runner(tmp_path_factory.mktemp("reference"))
    runner.train()
    return final_state(runner)


# mid-epoch; the last batch of an epoch (9, 17: the checkpoint holds batch 8 of 8, written before
# the epoch-end stages; resuming from it used to skip the next epoch); 8 batches/epoch
@pytest.mark.parametrize("stop_at", [3, 8, 9, 16, 17, 23])
def test_resume_after_exception_is_exact(tmp_path, reference, stop_at):
    runner = make_runner(tmp_path, hooks=[Explode(stop_at)], checkpoint_every=1)
    with pytest.raises(HookError, match="Explode.*after_train_iter"):
        runner.train()
    assert read_latest(tmp_path).name == f"iter_{stop_at - 1}.pth"
    resumed = make_runner(tmp_path, checkpoint_every=1, resume="auto")
    resumed.train()
    assert_same_state(final_state(resumed), reference)


class StopAfterEpoch(Hook):
    """Early stopping as EarlyStoppingHook does it: ``stop_training`` after an epoch."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def after_train_epoch(self, runner) -> None:
        if runner.epoch + 1 == self.epoch:
            runner.stop_training = True


def test_a_run_stopped_early_stays_stopped_when_resumed(tmp_path):
    first = make_runner(tmp_path, hooks=[StopAfterEpoch(2)])
    first.train()
    assert first.epoch == 2 and first.iter == 16
    assert torch.load(tmp_path / "epoch_2.pth", weights_only=True)["meta"]["stop_training"]
    again = make_runner(tmp_path, resume="auto")  # e.g. `hookline train ... --resume auto` rerun
    again.train()
    assert again.epoch == 2 and again.iter == 16 and again.stop_training


def test_extending_a_run_from_its_final_iteration_checkpoint_trains_the_new_epochs(tmp_path):
    """The documented way to extend a run: raise max_epochs and resume. The last save of an
    iteration-interval CheckpointHook falls on the last batch of the last epoch."""
    first = make_runner(tmp_path, max_epochs=1, checkpoint_every=4)
    first.train()
    assert read_latest(tmp_path).name == "iter_8.pth"
    extended = make_runner(tmp_path, max_epochs=3, checkpoint_every=4, resume="auto")
    extended.train()
    assert extended.epoch == 3 and extended.iter == 24


def test_resume_from_epoch_checkpoint_is_exact(tmp_path, reference):
    first = make_runner(tmp_path, max_epochs=2)
    first.train()
    resumed = make_runner(tmp_path, resume=tmp_path / "epoch_2.pth")
    assert (resumed.epoch, resumed.iter) == (0, 0)  # loading happens when training starts
    resumed.train()
    assert_same_state(final_state(resumed), reference)


def test_iteration_based_resume_is_exact(tmp_path):
    reference_runner = make_runner(tmp_path / "ref", max_iters=20)
    reference_runner.train()
    interrupted = make_runner(tmp_path / "run", max_iters=20, hooks=[Explode(13)],
                              checkpoint_every=4)
    with pytest.raises(HookError):
        interrupted.train()
    resumed = make_runner(tmp_path / "run", max_iters=20, checkpoint_every=4, resume="auto")
    resumed.train()
    assert_same_state(final_state(resumed), final_state(reference_runner))


class SendSignal(Hook):
    def __init__(self, at_iter: int, signum: int) -> None:
        self.at_iter, self.signum = at_iter, signum

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        if runner.iter + 1 == self.at_iter:
            os.kill(os.getpid(), self.signum)


class Record(Hook):
    def __init__(self) -> None:
        self.exceptions: list[BaseException] = []

    def on_exception(self, runner, exception) -> None:
        self.exceptions.append(exception)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_finishes_iteration_checkpoints_and_exits_nonzero(tmp_path, reference, signum):
    record = Record()
    runner = make_runner(tmp_path, hooks=[SendSignal(11, signum), record])
    with pytest.raises(TrainingInterrupted) as info:
        runner.train()
    assert info.value.code == 128 + signum
    assert runner.iter == 11  # the iteration in flight finished
    assert info.value.checkpoint == tmp_path / "iter_11.pth"
    assert record.exceptions == [info.value]
    log = (tmp_path / "log.txt").read_text()
    assert "checkpoint saved to" in log and "resume" in log.lower()
    resumed = make_runner(tmp_path, resume="auto")
    resumed.train()
    assert_same_state(final_state(resumed), reference)


def test_one_process_stops_at_once_whatever_the_signal_sync_interval(tmp_path):
    """signal_sync_interval spaces out the ranks' agreement; a single process has nobody to
    agree with and reads its own flag after every iteration."""
    runner = make_runner(tmp_path, hooks=[SendSignal(11, signal.SIGTERM)],
                         signal_sync_interval=50)
    with pytest.raises(TrainingInterrupted) as info:
        runner.train()
    assert runner.iter == 11 and info.value.checkpoint == tmp_path / "iter_11.pth"


def test_signal_handlers_are_restored_after_training(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    make_runner(tmp_path, max_epochs=1).train()
    assert signal.getsignal(signal.SIGTERM) is before


def _run_toy(work_dir: Path, out: Path, *extra: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(TOY), str(work_dir), "--out", str(out), *extra],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **popen)


def test_sigterm_subprocess_exits_nonzero_with_one_clear_line(tmp_path):
    proc = _run_toy(tmp_path, tmp_path / "final.pt", "--sleep", "0.05")
    deadline = time.time() + 60
    while read_latest(tmp_path) is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    output = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode == 128 + signal.SIGTERM
    assert "Traceback" not in output
    stop_lines = [line for line in output.splitlines() if "stopped by SIGTERM" in line]
    assert len(stop_lines) == 1 and "--resume auto" in stop_lines[0]


@pytest.mark.parametrize("seed", [0, 1])
def test_sigkill_at_random_iteration_then_resume_is_exact(tmp_path, reference, seed):
    """The kill point is drawn from a seeded generator, so a failure names its seed (the
    iteration it lands on still depends on the machine's speed)."""
    draw = random.Random(seed)
    work_dir = tmp_path / "run"
    proc = _run_toy(work_dir, tmp_path / "unused.pt", "--sleep", "0.03")
    time.sleep(draw.uniform(0.8, 1.6))  # python startup + a random number of iterations
    deadline = time.time() + 60
    while read_latest(work_dir) is None and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(draw.uniform(0.0, 0.3))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    resumed = _run_toy(work_dir, tmp_path / "final.pt", "--resume", "auto")
    output = resumed.communicate(timeout=120)[0].decode()
    assert resumed.returncode == 0, output
    assert "resumed from" in output
    assert_same_state(torch.load(tmp_path / "final.pt", weights_only=True), reference)
