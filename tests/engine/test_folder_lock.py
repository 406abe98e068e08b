"""One training process per work_dir: a Runner training into a folder another process trains
into is refused before it writes anything (two runs there would replace each other's
checkpoints); in one process the lock is shared (``hookline train`` holds it while its Runner
trains) and released when ``train()`` ends."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner
from hookline.engine.folder_lock import LOCK_FILE, lock_folder

HOLD = textwrap.dedent("""
    import sys, time
    from hookline.engine.folder_lock import lock_folder
    lock = lock_folder(sys.argv[1], "x")
    print("HELD", flush=True)
    time.sleep(60)
""")


def make(work_dir) -> Runner:
    data = TensorDataset(torch.ones(8, 2), torch.ones(8, 1))
    return Runner(torch.nn.Linear(2, 1), optimizer={"type": "SGD", "lr": 0.1},
                  loss_fn=torch.nn.MSELoss(), train_dataloader=DataLoader(data, batch_size=4),
                  max_epochs=1, work_dir=str(work_dir),
                  default_hooks={"progress": None, "logger": None})


def test_a_second_process_training_into_the_work_dir_is_refused_first(tmp_path) -> None:
    runner = make(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], text=True,
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "HELD"
        with pytest.raises(ConfigError, match=r"in use by another hookline training run \(pid "
                                              rf"{holder.pid} .*give this Runner another work_dir"):
            runner.train()
        assert not list(tmp_path.glob("*.pth"))  # nothing written
    finally:
        holder.kill()
        holder.wait()
    runner.train()  # the holder is gone: the lock is free (its file left behind blocks nothing)
    assert (tmp_path / "epoch_1.pth").exists() and not (tmp_path / LOCK_FILE).exists()


def test_in_one_process_the_lock_is_shared_and_released_by_its_last_holder(tmp_path) -> None:
    outer = lock_folder(tmp_path, "x")  # what hookline train holds around its Runner
    assert outer is not None
    make(tmp_path).train()
    assert (tmp_path / LOCK_FILE).exists()  # still the outer holder's
    outer.release()
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_full_disk_still_locks_the_folder(tmp_path) -> None:
    """Writing the holder's name may fail (the disk is full): the folder is locked all the
    same, and the run's own write is what fails, naming its file (not the lock's OSError)."""
    script = textwrap.dedent("""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
        from hookline.engine.folder_lock import lock_folder
        lock = lock_folder(sys.argv[1], "x")
        print("locked" if lock is not None else "none")
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "locked", done.stderr
