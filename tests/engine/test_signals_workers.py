"""A signal to the whole process group (SLURM's ``scancel``, ``kill -TERM -PGID``, Ctrl-C in a
terminal) reaches the DataLoader's workers too: the run still stops with a checkpoint after
its last finished iteration (exit 143 / 130), and the workers do not print hookline's stop
line as their own (a real subprocess with two workers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import sys, time, torch
    from torch.utils.data import DataLoader, Dataset
    from hookline import Hook, Runner

    class Slow(Dataset):
        def __len__(self): return 256
        def __getitem__(self, i):
            time.sleep(0.01)
            return torch.full((4,), float(i % 7)), i % 2

    class Mark(Hook):
        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            print("ITER", runner.iter + 1, flush=True)

    torch.manual_seed(0)
    Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
           loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2, work_dir=sys.argv[1],
           train_dataloader=DataLoader(Slow(), batch_size=8, num_workers=2,
                                       persistent_workers=True),
           hooks=[Mark()], default_hooks={"progress": None, "checkpoint": None}).train()
""")


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_to_the_process_group_stops_with_a_checkpoint(tmp_path, signum, code):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    work_dir = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    child = subprocess.Popen([sys.executable, str(script), str(work_dir)], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
    lines = []
    assert child.stdout is not None
    for line in child.stdout:
        lines.append(line)
        if line.startswith("ITER 4"):
            os.killpg(child.pid, signum)
            break
    lines += child.stdout.readlines()
    child.wait(timeout=120)
    output = "".join(lines)
    assert child.returncode == code, output
    saved = sorted(p.name for p in work_dir.glob("iter_*.pth"))
    assert len(saved) == 1 and f"stopped by {signal.Signals(signum).name}" in output, output
    assert output.count(f"{signal.Signals(signum).name} received") == 1, output
