"""``log.txt`` and ``metrics.jsonl`` on a disk that fills up during training.

A real Runner trains in a subprocess whose file-size limit (``RLIMIT_FSIZE``, with
SIGXFSZ ignored: every write past the limit fails with EFBIG, as writes on a full disk
fail with ENOSPC) is hit by both files. Expected: one line on stderr for ``log.txt``
(written once, not per log line), one error naming ``metrics.jsonl``, no logging
tracebacks, nothing more at exit, and every record written before intact."""

from __future__ import annotations

import builtins
import errno
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hookline import Hook
from hookline.engine.log_file import LogWriteError, RunLogFile
from hookline.engine.logs import close_logger, make_logger
from hookline.hooks import logger as logger_module

from ._toy import make_runner

SCRIPT = """
import resource, signal, sys
import torch
from torch.utils.data import DataLoader, TensorDataset
from hookline import Runner

torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(48, 6)
data = TensorDataset(x, (x[:, 0] > 0).long())
runner = Runner(torch.nn.Linear(6, 2), optimizer={"type": "SGD", "lr": 0.1},
                loss_fn=torch.nn.CrossEntropyLoss(),
                train_dataloader=DataLoader(data, batch_size=8),
                val_dataloader=DataLoader(data, batch_size=16), metrics={"accuracy": "accuracy"},
                max_epochs=8, work_dir=sys.argv[1],
                default_hooks={"logger": {"type": "LoggerHook", "interval": 1},
                               "checkpoint": None, "progress": None})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (BYTES_LIMIT, BYTES_LIMIT))
try:
    runner.train()
except Exception as exc:
    original = getattr(exc, "original", None)
    print(f"RAISED {type(exc).__name__} | {type(original).__name__} | {original}")
else:
    print("TRAINED")
"""


def train_with_file_limit(tmp_path: Path, limit: int) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("BYTES_LIMIT", str(limit)))
    return subprocess.run([sys.executable, str(script), str(tmp_path / "run")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32",
                    reason="RLIMIT_FSIZE is POSIX")
def test_a_full_disk_is_one_error_naming_metrics_jsonl_and_one_line_for_log_txt(tmp_path):
    limit = 3000
    result = train_with_file_limit(tmp_path, limit)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output  # the script reports the error itself
    assert "--- Logging error ---" not in output
    assert "Exception ignored" not in output and "Traceback" not in output, output
    # log.txt: one line on stderr naming it, nothing else there
    run = tmp_path / "run"
    assert result.stderr.strip().splitlines() == [
        f"hookline: cannot write {str(run / 'log.txt')!r}: File too large (EFBIG); later "
        "lines of this run are not written to it (the console, if any, still shows them)"]
    # metrics.jsonl: the run fails with one error that names it
    (raised,) = [line for line in result.stdout.splitlines() if line.startswith("RAISED")]
    assert raised == (f"RAISED HookError | LogWriteError | cannot write "
                      f"{str(run / 'metrics.jsonl')!r}: File too large (EFBIG)"), raised
    # the console still got every log line up to the failure (log.txt got fewer)
    assert result.stdout.count("Epoch(train)") > (run / "log.txt").read_text().count("Epoch(train)")
    # what was written before is intact: whole JSON records only (no torn last line)
    text = (run / "metrics.jsonl").read_text()
    assert 0 < len(text) <= limit and text.endswith("\n")
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["iter"] for r in records if r["mode"] == "train"][:3] == [1, 2, 3]


def test_the_log_file_handler_fails_once_and_closes_quietly(tmp_path, capsys):
    """``log.txt``'s stream fails (ENOSPC) after its first line: one line on stderr naming
    the file, the later lines go on to the other handlers, closing raises nothing."""
    logger = make_logger(tmp_path, main_process=True, console=False)
    other = logging.Handler()
    seen: list[str] = []
    other.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger.addHandler(other)
    logger.info("first")
    (handler,) = [h for h in logger.handlers if isinstance(h, RunLogFile)]
    stream = handler.stream

    class Full:
        def write(self, text):
            stream.write(text)  # buffered: the flush fails, as on a full disk
            return len(text)

        def flush(self):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def close(self):
            stream.close()

    handler.stream = Full()
    for n in range(5):
        logger.info("line %d", n)
    close_logger(logger)  # no error at close
    err = capsys.readouterr().err
    assert "Logging error" not in err and "Traceback" not in err
    assert err.strip().splitlines() == [
        f"hookline: cannot write {str(tmp_path / 'log.txt')!r}: No space left on device "
        "(ENOSPC); later lines of this run are not written to it (the console, if any, "
        "still shows them)"]
    assert isinstance(handler.failure, LogWriteError) and handler.failure.errno == errno.ENOSPC
    assert seen == ["first"] + [f"line {n}" for n in range(5)]
    text = (tmp_path / "log.txt").read_text()
    assert "first" in text and "line 1" not in text  # nothing tried after the failure


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_queued_write_failure_behind_another_error_is_one_log_line(tmp_path, monkeypatch):
    """Training fails (a hook raises) while a queued ``metrics.jsonl`` append fails too (a
    real write to ``/dev/full``: ENOSPC): the hook's error is raised, the write failure is
    one ERROR line naming the file, not a second traceback from ``on_exception``."""
    def full_open(path, *args, **kwargs):  # metrics.jsonl's appends go to /dev/full
        return builtins.open("/dev/full", *args, **kwargs)

    monkeypatch.setattr(logger_module, "open", full_open, raising=False)

    class Boom(Hook):
        priority = "LOWEST"  # after LoggerHook queued the iteration's record

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            if runner.iter == 2:
                raise ValueError("boom")

    runner = make_runner(tmp_path, hooks=[Boom()],
                         default_hooks={"logger": {"type": "LoggerHook", "interval": 3}})
    with pytest.raises(Exception, match="boom"):
        runner.train()
    runner.close()
    log = (tmp_path / "log.txt").read_text()
    assert "on_exception hook LoggerHook failed" not in log
    assert f"ERROR - cannot write {str(tmp_path / 'metrics.jsonl')!r}: No space left on device " \
           "(ENOSPC)" in log
