"""The line a signal stops a run with and the line the resumed run starts with name the
point the same way, in the numbering of the training log lines around it.

Runs of tests/engine/toy.py (8 batches per epoch, 4 epochs, validation after each) get a
real SIGINT delivered in-process at an exact point, then resume from the checkpoint the
stop wrote."""

from __future__ import annotations

import re
import signal

import pytest

from hookline import TrainingInterrupted

from .toy import FaultAt, make_runner

LOG_EVERY_ITER = {"logger": {"type": "LoggerHook", "interval": 1}}
POSITION = re.compile(r"(Epoch|Iter)\((train|val)\) \S+")


def positions(lines: list[str]) -> list[str]:
    """The ``Epoch(train) [1][6/8]``-style positions of the log lines, in order."""
    return [match.group(0) for line in lines if (match := POSITION.search(line))]


@pytest.mark.parametrize(("stage", "at", "where", "last_before", "first_after"), [
    ("after_train_iter", 5, "after batch 5 of epoch 1 (iteration 5)",
     "Epoch(train) [1][5/8]", "Epoch(train) [1][6/8]"),
    ("after_train_iter", 16, "after batch 8 of epoch 2 (iteration 16)",
     "Epoch(train) [2][8/8]", "Epoch(val) [2][4/4]"),
    ("after_train_epoch", 16, "after epoch 2 (iteration 16), before its validation",
     "Epoch(train) [2][8/8]", "Epoch(val) [2][4/4]"),
    ("after_val_epoch", 16, "after epoch 2 (iteration 16)",
     "Epoch(val) [2][4/4]", "Epoch(train) [3][1/8]"),
])
def test_stop_and_resume_lines_name_the_same_point(tmp_path, stage, at, where, last_before,
                                                   first_after):
    with pytest.raises(TrainingInterrupted) as stopped:
        make_runner(tmp_path, hooks=[FaultAt(stage, at, signal.SIGINT)],
                    default_hooks=LOG_EVERY_ITER).train()
    first_log = (tmp_path / "log.txt").read_text().splitlines()
    assert f"stopped by SIGINT {where}; checkpoint saved to" in str(stopped.value)
    assert sum(f"stopped by SIGINT {where};" in line for line in first_log) == 1
    assert positions(first_log)[-1] == last_before

    make_runner(tmp_path, resume=stopped.value.checkpoint, default_hooks=LOG_EVERY_ITER).train()
    log = (tmp_path / "log.txt").read_text().splitlines()[len(first_log):]
    resumed = [line for line in log if "resumed from" in line]
    assert len(resumed) == 1
    assert resumed[0].endswith(f"resumed from {stopped.value.checkpoint}, continuing {where}")
    assert positions(log)[0] == first_after


def test_iteration_based_runs_count_iterations_in_both_lines(tmp_path):
    with pytest.raises(TrainingInterrupted) as stopped:
        make_runner(tmp_path, max_iters=20, hooks=[FaultAt("after_train_iter", 13, signal.SIGTERM)],
                    default_hooks=LOG_EVERY_ITER).train()
    assert "stopped by SIGTERM after iteration 13; checkpoint saved to" in str(stopped.value)
    first_log = (tmp_path / "log.txt").read_text().splitlines()
    make_runner(tmp_path, max_iters=20, resume="auto", default_hooks=LOG_EVERY_ITER).train()
    log = (tmp_path / "log.txt").read_text().splitlines()[len(first_log):]
    assert any(line.endswith("iter_13.pth, continuing after iteration 13") for line in log)
    assert positions(log)[0] == "Iter(train) [14/20]"
