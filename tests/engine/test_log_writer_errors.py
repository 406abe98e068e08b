"""A queued call that fails: its error is raised once, to the caller, with one traceback.

Calls queued after it that call ``submit`` themselves (a log step's work appends its
record that way, on the writer thread) must not re-raise it inside the writer thread,
where each re-raise grew the same exception's traceback and stored it again."""

from __future__ import annotations

import errno
import os
import traceback

import pytest

from hookline.engine.log_writer import LogWriter


def test_a_failure_is_raised_once_with_one_traceback():
    writer = LogWriter("test-writer")
    done: list[int] = []

    def fail():
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def nested(n):  # like LoggerHook._finish_train_log, which submits its record append
        writer.submit(done.append, n)

    writer.submit(fail)
    for n in range(6):
        writer.submit(nested, n)
    with pytest.raises(OSError) as info:
        writer.drain()
    frames = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert frames.count("fail") == 1 and frames.count("_raise_error") == 1, frames
    assert "nested" not in frames
    assert done == list(range(6))  # the calls after the failure still ran
    writer.drain()  # raised once: nothing more
    writer.close()
