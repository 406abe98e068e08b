"""``hookline train`` when training fails for a reason the user can act on: one ``error:``
line naming what failed, no traceback, no empty run folder left behind.

A full disk is a file-size limit in a real subprocess (``RLIMIT_FSIZE``, SIGXFSZ ignored:
a write past it fails with EFBIG, as a write on a full disk fails with ENOSPC); a NaN loss
is a real run with a huge learning rate and CheckInvalidLossHook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from hookline.app.commands import _outputs, natural_order
from hookline.cli import main

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")

CONFIG = {
    "model": {"type": "DigitsCNN", "num_classes": 10},
    "loss_fn": {"type": "CrossEntropyLoss"},
    "optimizer": {"type": "SGD", "lr": 0.05, "momentum": 0.9},
    "train_dataloader": {"dataset": {"type": "DigitsDataset", "split": "train"},
                         "batch_size": 32, "shuffle": True},
    "val_dataloader": {"dataset": {"type": "DigitsDataset", "split": "val"}, "batch_size": 128},
    "metrics": {"accuracy": "accuracy"},
    "max_epochs": 2,
    "num_threads": 1,
    "default_hooks": {"logger": {"type": "LoggerHook", "interval": 1}, "checkpoint": None,
                      "progress": None},
}

#: ``python LIMITED BYTES ARGS...``: ``hookline ARGS...`` with files limited to BYTES
LIMITED = """
import resource, signal, sys
from hookline.cli import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.exit(main(sys.argv[2:]))
"""


def train_limited(tmp_path: Path, limit: int, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    (tmp_path / "limited.py").write_text(LIMITED)
    return subprocess.run([sys.executable, "limited.py", str(limit), "train", "run.yaml",
                           "--work-dir", "wd", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert "Logging error" not in result.stdout + result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def test_a_last_run_pointer_that_cannot_be_written_is_one_error_and_no_folder(tmp_path):
    result = train_limited(tmp_path, 1)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == error_lines(result) == [
        "error: cannot write 'wd/last_run': File too large (EFBIG); free some space there or "
        "choose another work dir (--work-dir)"]
    assert not (tmp_path / "wd").exists()  # the command made it: nothing is left


def test_a_config_that_cannot_be_written_is_one_error_and_no_folder(tmp_path):
    (tmp_path / "wd").mkdir()
    result = train_limited(tmp_path, 300)
    assert result.returncode == 2, result.stderr
    (error,) = error_lines(result)
    assert error.startswith("error: cannot write 'wd/") and "/config.yaml': File too large " \
        "(EFBIG); free some space there" in error, error
    assert list((tmp_path / "wd").iterdir()) == []  # no run folder, no last_run pointer


def test_metrics_jsonl_that_cannot_be_written_is_one_error_naming_it(tmp_path):
    result = train_limited(tmp_path, 4000)
    assert result.returncode == 2, result.stderr
    (error,) = error_lines(result)
    (run,) = (tmp_path / "wd").glob("2*")
    assert error == (f"error: cannot write {str(Path('wd') / run.name / 'metrics.jsonl')!r}: "
                     "File too large (EFBIG)")
    # log.txt, which failed first: one line, not one per log line
    (log_line,) = [line for line in result.stderr.splitlines() if "log.txt" in line]
    assert log_line.startswith("hookline: cannot write ") and "(EFBIG)" in log_line
    assert len(result.stderr.strip().splitlines()) == 2, result.stderr
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert records and records[0]["iter"] == 1  # what was written is intact
    assert not (run / "curves.png").exists()  # no plot attempted on the full disk


NAN = {**CONFIG, "optimizer": {"type": "SGD", "lr": 1.0e30, "momentum": 0.9},
       "hooks": [{"type": "CheckInvalidLossHook"}]}


def test_a_nan_loss_is_one_error_line_without_a_logger_guess(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nan.yaml").write_text(yaml.safe_dump(NAN, sort_keys=False))
    assert main(["train", "nan.yaml", "--work-dir", "wd"]) == 1
    out, err = capsys.readouterr()
    assert err.strip().splitlines()[-1:] == [line for line in err.splitlines()
                                             if line.startswith("error:")]
    (error,) = err.strip().splitlines()
    assert error.startswith("error: the training loss is ") and "at iteration 2" in error
    assert "lower learning rate" in error
    assert "logger hook off" not in out + err and "curves.png not written" not in out + err


def test_the_summary_lists_checkpoints_in_numeric_order(tmp_path):
    for name in ("epoch_10.pth", "epoch_2.pth", "epoch_1.pth", "best_accuracy_epoch_9.pth"):
        (tmp_path / name).write_bytes(b"")
    listed = _outputs(types.SimpleNamespace(work_dir=tmp_path), write_curves=False)
    assert listed == ("checkpoints (best_accuracy_epoch_9.pth, epoch_1.pth, epoch_2.pth, "
                      "epoch_10.pth)")
    assert sorted(["iter_100.pth", "iter_20.pth"], key=natural_order) == ["iter_20.pth",
                                                                          "iter_100.pth"]
