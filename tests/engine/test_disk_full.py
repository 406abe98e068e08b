"""A disk that fills up: an OSError(ENOSPC) injected into the one checkpoint write path.

A write that fails is one CheckpointWriteError naming the file and the cause; the
checkpoints written before stay intact; keep-N deletes the oldest first when the disk
cannot hold one more, and never leaves fewer than one good checkpoint."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from hookline import HookError
from hookline.engine.checkpoint import CheckpointWriteError, atomic, load_checkpoint_file

from .toy import make_runner


def fill_disk(monkeypatch, capacity: int, error: int = errno.ENOSPC) -> list[str]:
    """A folder that holds ``capacity`` checkpoint files: one more fails to write, as on a
    full disk (half a temp file written, then ENOSPC). Returns the names of failed writes."""
    real = atomic.atomic_write
    failed: list[str] = []

    def write(path: Path, writer):
        if path.suffix == ".pth" and not path.exists() \
                and len(list(path.parent.glob("*.pth"))) >= capacity:
            failed.append(path.name)

            def half_then_full(stream):
                stream.write(b"PK\x03\x04 half a checkpoint")
                raise OSError(error, os.strerror(error))

            return real(path, half_then_full)
        return real(path, writer)

    monkeypatch.setattr(atomic, "atomic_write", write)
    return failed


def pth(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".pth" or p.name.endswith(".tmp"))


def keep(n: int) -> dict:
    return {"checkpoint": {"type": "CheckpointHook", "max_keep_ckpts": n}}


def test_keep_n_deletes_the_oldest_first_when_the_disk_is_full(tmp_path, monkeypatch):
    failed = fill_disk(monkeypatch, capacity=2)
    runner = make_runner(tmp_path, default_hooks=keep(2))
    runner.train()
    assert failed == ["epoch_3.pth", "epoch_4.pth"]  # each made room by deleting the oldest
    assert pth(tmp_path) == ["epoch_3.pth", "epoch_4.pth"]
    assert load_checkpoint_file(tmp_path / "epoch_4.pth")["meta"]["epoch"] == 4
    log = (tmp_path / "log.txt").read_text()
    assert "disk full writing" in log and "deleted epoch_1.pth" in log


def test_with_one_checkpoint_kept_the_full_disk_is_an_error_and_it_stays(tmp_path, monkeypatch):
    fill_disk(monkeypatch, capacity=1)
    runner = make_runner(tmp_path, default_hooks=keep(1))
    with pytest.raises((CheckpointWriteError, HookError)) as info:
        runner.train()
    error = info.value if isinstance(info.value, CheckpointWriteError) else info.value.original
    assert isinstance(error, CheckpointWriteError) and error.errno == errno.ENOSPC
    assert str(error) == (f"cannot write checkpoint {str(tmp_path / 'epoch_2.pth')!r}: "
                          "No space left on device (ENOSPC)")
    assert pth(tmp_path) == ["epoch_1.pth"]  # intact, no temp file left
    assert load_checkpoint_file(tmp_path / "epoch_1.pth")["meta"]["epoch"] == 1


def test_without_keep_n_nothing_is_deleted_to_make_room(tmp_path, monkeypatch):
    fill_disk(monkeypatch, capacity=2)
    with pytest.raises((CheckpointWriteError, HookError), match="epoch_3.pth"):
        make_runner(tmp_path, default_hooks=keep(-1)).train()
    assert pth(tmp_path) == ["epoch_1.pth", "epoch_2.pth"]


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS, errno.EIO])
def test_other_write_failures_name_the_file_and_the_cause(tmp_path, monkeypatch, code):
    fill_disk(monkeypatch, capacity=0, error=code)
    runner = make_runner(tmp_path, max_epochs=1)
    with pytest.raises(CheckpointWriteError) as info:
        runner.save_checkpoint("manual.pth")
    assert str(info.value) == (f"cannot write checkpoint {str(tmp_path / 'manual.pth')!r}: "
                               f"{os.strerror(code)} ({errno.errorcode[code]})")
    assert isinstance(info.value.__cause__, OSError) and pth(tmp_path) == []


CONFIG = """
custom_imports: [full_disk]
model: {type: DigitsCNN}
loss_fn: {type: CrossEntropyLoss}
optimizer: {type: Adam, lr: 0.003}
train_dataloader: {dataset: {type: DigitsDataset, split: train}, batch_size: 256}
max_epochs: 3
num_threads: 1
default_hooks: {progress: null, checkpoint: {max_keep_ckpts: 1}}
"""

FULL_DISK = """
import errno, os
from hookline.engine.checkpoint import atomic

real = atomic.atomic_write

def write(path, writer):
    if path.suffix == ".pth" and list(path.parent.glob("*.pth")):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return real(path, writer)

atomic.atomic_write = write
"""


def test_the_cli_prints_one_error_line_and_no_traceback(tmp_path):
    (tmp_path / "run.yaml").write_text(CONFIG)
    (tmp_path / "full_disk.py").write_text(textwrap.dedent(FULL_DISK))
    result = subprocess.run(
        [sys.executable, "-m", "hookline.cli", "train", "run.yaml", "--work-dir", "work",
         "--no-curves"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and result.stderr.strip() == errors[0]
    assert "cannot write checkpoint" in errors[0] and "epoch_2.pth" in errors[0]
    assert "No space left on device (ENOSPC)" in errors[0]
    (run_dir,) = [p for p in (tmp_path / "work").iterdir() if p.is_dir()]  # the run's folder
    assert sorted(p.name for p in run_dir.glob("*.pth")) == ["epoch_1.pth"]
    assert torch.load(run_dir / "epoch_1.pth", weights_only=True)["meta"]["epoch"] == 1
