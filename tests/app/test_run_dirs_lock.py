"""The run folder lock: one training process per run folder; a killed holder blocks nothing."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from hookline.app import run_dirs
from hookline.core import ConfigError

HOLD = """
import sys, time
from hookline.app.run_dirs import lock_run_dir
lock = lock_run_dir(sys.argv[1])
print("locked", flush=True)
time.sleep(60)
"""


def test_a_second_lock_in_this_process_shares_it_and_the_last_release_removes_the_file(
        tmp_path):
    """In one process the lock is shared (the Runner's train() locks the folder hookline train
    locked); another process is refused (below)."""
    lock = run_dirs.lock_run_dir(tmp_path)
    assert lock is not None and (tmp_path / run_dirs.RUN_LOCK_FILE).is_file()
    shared = run_dirs.lock_run_dir(tmp_path)
    assert shared is lock
    shared.release()
    assert (tmp_path / run_dirs.RUN_LOCK_FILE).is_file()
    lock.release()
    lock.release()  # twice is harmless
    assert not (tmp_path / run_dirs.RUN_LOCK_FILE).exists()
    again = run_dirs.lock_run_dir(tmp_path)
    assert again is not None
    again.release()


def test_the_lock_of_a_killed_process_blocks_nothing(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(ConfigError, match=rf"pid {holder.pid} on "):
            run_dirs.lock_run_dir(tmp_path)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    assert (tmp_path / run_dirs.RUN_LOCK_FILE).exists()  # left behind by the killed process
    lock = run_dirs.lock_run_dir(tmp_path)
    assert lock is not None
    lock.release()
