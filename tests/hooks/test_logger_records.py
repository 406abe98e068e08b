"""No log record is lost, duplicated or reordered by LoggerHook's writer thread, whichever way
a run ends: a real process (tests/hooks/log_records_script.py) logs every iteration and ends
normally, by an exception in a hook, by ``sys.exit`` in a hook, or by a SIGTERM from this
process; its log.txt, metrics.jsonl and console lines must all hold iterations 1..N, once,
in order, and say the same thing. In a run whose writer lags behind, every record is on disk
at each epoch end and before each checkpoint."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Hook, Runner
from hookline.hooks import LoggerHook

from .log_records_script import SlowHandler

SCRIPT = Path(__file__).with_name("log_records_script.py")
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
TRAIN = re.compile(r" - hookline - INFO - (Iter\(train\) \[\s*(\d+)/\d+\]  .*)$")


def train_lines(text: str) -> list[tuple[int, str]]:
    """(iteration, line after the prefix) of each training line in ``text``."""
    return [(int(m[2]), m[1]) for m in map(TRAIN.search, text.splitlines()) if m]


def check_records(work_dir: Path, console: str) -> int:
    """Assert log.txt, metrics.jsonl and the console each hold iterations 1..N once, in
    order, with the same lines and losses; return N."""
    logged = train_lines((work_dir / "log.txt").read_text(encoding="utf-8"))
    shown = train_lines(console)
    records = [json.loads(line) for line in
               (work_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    last = len(records)
    assert [r["iter"] for r in records] == list(range(1, last + 1))
    assert [n for n, _ in logged] == list(range(1, last + 1))
    assert shown == logged  # the console shows exactly the lines of log.txt, in order
    for (_, line), record in zip(logged, records):
        assert line.endswith(f"loss: {record['loss']:.4f}"), (line, record)
    return last


def run(work_dir: Path, mode: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(work_dir), mode, *extra], env=ENV,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("where", ["writer thread", "training thread"])
def test_a_run_that_ends_normally_writes_every_record(tmp_path: Path, where: str) -> None:
    extra = ["--foreground"] if where == "training thread" else []
    done = run(tmp_path, "normal", *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    assert check_records(tmp_path, done.stdout) == 40


def test_an_exception_in_a_hook_loses_no_record(tmp_path: Path) -> None:
    failed = run(tmp_path, "raise", "--at", "23")
    assert failed.returncode == 1
    assert "stopped on purpose at iteration 23" in failed.stderr
    assert check_records(tmp_path, failed.stdout) == 23


def test_sys_exit_in_a_hook_loses_no_record(tmp_path: Path) -> None:
    exited = run(tmp_path, "exit", "--at", "31")
    assert exited.returncode == 3, exited.stderr[-3000:]
    assert check_records(tmp_path, exited.stdout) == 31


def test_sigterm_mid_run_loses_no_record(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(tmp_path), "sigterm"], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    console = []
    for line in proc.stdout:  # signal once the fifth training line is on the console
        console.append(line)
        if "Iter(train) [    5/" in line:
            break
    proc.send_signal(signal.SIGTERM)
    rest, errors = proc.communicate(timeout=120)
    console.append(rest)
    assert proc.returncode == 128 + signal.SIGTERM, errors[-3000:]
    last = check_records(tmp_path, "".join(console))
    assert last >= 5
    # the run stopped after the iteration it was in, and its checkpoint names that iteration
    assert (tmp_path / f"iter_{last}.pth").is_file()
    assert "stopped by SIGTERM" in "".join(console)


class SeenOnDisk(Hook):
    """After the LoggerHook (LOWEST), at the end of each epoch and before each checkpoint:
    the iterations metrics.jsonl holds."""

    priority = "LOWEST"

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, list[int]]] = []

    def _look(self, stage: str, runner, done: int) -> None:
        path = runner.work_dir / "metrics.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        self.seen.append((stage, done, [json.loads(line)["iter"] for line in lines]))

    def after_train_epoch(self, runner) -> None:
        self._look("epoch end", runner, runner.iter)

    def before_save_checkpoint(self, runner, checkpoint) -> None:
        self._look("checkpoint", runner, runner.iter + 1)  # saved in after_train_iter


def test_records_are_on_disk_at_each_epoch_end_and_before_each_checkpoint(tmp_path: Path) -> None:
    seen = SeenOnDisk()
    data = TensorDataset(torch.randn(48, 6), torch.randint(0, 3, (48,)))
    runner = Runner(torch.nn.Linear(6, 3), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2,
                    train_dataloader=DataLoader(data, batch_size=4), work_dir=tmp_path,
                    hooks=[seen],
                    default_hooks={"logger": {"type": "LoggerHook", "interval": 1},
                                   "checkpoint": {"type": "CheckpointHook", "interval": 5,
                                                  "by_epoch": False},
                                   "progress": None})
    runner.logger.addHandler(SlowHandler())  # the writer thread lags behind training
    runner.train()
    assert [(stage, at) for stage, at, _ in seen.seen] == [
        ("checkpoint", 5), ("checkpoint", 10), ("epoch end", 12), ("checkpoint", 15),
        ("checkpoint", 20), ("checkpoint", 24), ("epoch end", 24)]
    for stage, at, iters in seen.seen:
        assert iters == list(range(1, at + 1)), stage  # every record so far, none missing


def test_background_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match="LoggerHook background must be true or false"):
        LoggerHook(background="yes")
