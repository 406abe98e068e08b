"""Real processes killed at exact points (tests/engine/toy.py's ``--fault STAGE@ITER:SIGNAL``:
the process signals itself there), then resumed with ``--resume auto`` in a new process:
the result is bit-identical to the run never stopped, and nothing is left behind (no temp
file, no checkpoint over the keep-N quota). The points are drawn from seeded generators."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from .test_resume import ENV, TOY, assert_same_state
from .toy import final_state, make_runner

STAGES = ["after_train_iter", "after_train_epoch", "before_val_epoch", "after_val_iter",
          "after_val", "before_save_checkpoint", "after_train"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    runner = make_runner(tmp_path_factory.mktemp("reference"))
    runner.train()
    return final_state(runner)


def toy(work_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOY), str(work_dir), *args], env=ENV,
                          capture_output=True, text=True, timeout=300)


def resume_and_check(work_dir: Path, tmp_path: Path, reference: dict, *extra: str) -> str:
    done = toy(work_dir, "--resume", "auto", "--out", str(tmp_path / "final.pt"), *extra)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_same_state(torch.load(tmp_path / "final.pt", weights_only=True), reference)
    assert not [p.name for p in work_dir.iterdir() if p.name.endswith(".tmp")]
    return done.stdout


def draw_point(seed: int) -> tuple[str, int]:
    draw = random.Random(seed)
    stage = draw.choice(STAGES)
    if stage in ("after_train_epoch", "before_val_epoch", "after_val_iter", "after_val"):
        return stage, 8 * draw.randint(1, 4)  # the stages that run at epoch ends
    if stage == "after_train":
        return stage, 32
    if stage == "before_save_checkpoint":
        return stage, 3 * draw.randint(1, 10)  # the toy saves every 3 iterations
    return stage, draw.randint(1, 32)


@pytest.mark.parametrize("seed", [9, 14, 19])
def test_sigkill_at_a_seeded_exact_point_then_resume_is_exact(tmp_path, reference, seed):
    stage, at = draw_point(seed)
    work_dir = tmp_path / "run"
    killed = toy(work_dir, "--keep", "2", "--fault", f"{stage}@{at}:SIGKILL")
    assert killed.returncode == -signal.SIGKILL, (stage, at, killed.stdout + killed.stderr)
    resume_and_check(work_dir, tmp_path, reference, "--keep", "2")
    iters = sorted(int(p.stem.split("_")[1]) for p in work_dir.glob("iter_*.pth"))
    assert iters == [30, 32], (stage, at)  # keep 2 held across the kill


def test_a_kill_between_a_write_and_the_keep_n_deletion_leaks_nothing(tmp_path, reference):
    work_dir = tmp_path / "run"
    killed = toy(work_dir, "--keep", "2", "--kill-before-delete")
    assert killed.returncode == -signal.SIGKILL
    assert sorted(p.name for p in work_dir.glob("*.pth")) == ["iter_3.pth", "iter_6.pth",
                                                              "iter_9.pth"]
    output = resume_and_check(work_dir, tmp_path, reference, "--keep", "2")
    assert "removed iter_3.pth: over max_keep_ckpts" in output
    assert sorted(p.name for p in work_dir.glob("*.pth")) == ["iter_30.pth", "iter_32.pth"]


def test_sigterm_during_the_final_validation_checkpoints_and_the_resume_has_nothing_to_do(
        tmp_path, reference):
    work_dir = tmp_path / "run"
    stopped = toy(work_dir, "--fault", "after_val_iter@32:SIGTERM")
    assert stopped.returncode == 128 + signal.SIGTERM
    assert "Traceback" not in stopped.stdout + stopped.stderr
    assert stopped.stdout.count("stopped by SIGTERM after epoch 4 (iteration 32)") == 1
    output = resume_and_check(work_dir, tmp_path, reference)
    assert output.count("nothing left to train") == 1


@pytest.mark.parametrize("name, code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_while_the_last_checkpoint_is_written_finishes_it(tmp_path, reference, name,
                                                                   code):
    """The last checkpoint's background write completes under the signal (not killed half
    way by the default handler): the run stops as at any other point, with a checkpoint."""
    work_dir = tmp_path / "run"
    done = toy(work_dir, "--signal-in-final-wait", name)
    output = done.stdout + done.stderr
    assert done.returncode == code, output  # not -SIGTERM: the default handler killed it
    assert f"stopped by {name} after epoch 4 (iteration 32)" in output
    assert "iter_32.pth" in {p.name for p in work_dir.iterdir()}
    assert not [p.name for p in work_dir.iterdir() if p.name.endswith(".tmp")]
    resume_and_check(work_dir, tmp_path, reference)
