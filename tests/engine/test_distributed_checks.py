"""Two-rank construction checks under ``torchrun --nproc_per_node 2`` (gloo): uneven shards of
a DefaultSampler(round_up=False) are one clear error on every rank, before training (they used
to crash gloo mid-epoch), and a model wrapped in DDP with frozen parameters gets a warning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

SCRIPT = Path(__file__).parent / "dist_scripts" / "ddp_checks.py"

pytestmark = pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                                reason="torch.distributed with gloo is not available")


def _torchrun(case: str, out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node", "2", str(SCRIPT), case, str(out)],
                          env=env, capture_output=True, text=True, timeout=120)


def test_uneven_default_sampler_shards_are_one_error_on_every_rank(tmp_path):
    done = _torchrun("uneven", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in (0, 1):
        said = (tmp_path / f"rank{rank}.txt").read_text()
        assert said.startswith("error: "), said
        assert "gives the ranks [6, 5] batches per epoch" in said
    assert not (tmp_path / "work").exists() or not any(
        p.suffix == ".pth" for p in (tmp_path / "work").rglob("*"))


def test_frozen_parameters_under_ddp_are_warned_about_once(tmp_path):
    done = _torchrun("frozen", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(tmp_path / f"rank{r}.txt").read_text() for r in (0, 1)] == ["built", "built"]
    logs = done.stdout + done.stderr  # the console of both ranks
    warned = [line for line in logs.splitlines()
              if "2 parameter(s) are frozen (requires_grad=False) while "
                 "DistributedDataParallel wraps the model" in line]
    assert len(warned) == 1, logs  # rank 0 only
    assert "wraps the model: 0.weight, 0.bias." in warned[0]
    assert "unfreeze at an epoch's start" in warned[0]


def test_a_layer_unfrozen_at_an_epoch_start_trains_in_step_on_both_ranks(tmp_path):
    """DDP synchronises only what needed a gradient when it was built: the Runner builds it
    again after the before_train_epoch hook that unfreezes the layer, so both ranks end with
    the same weights (each rank sees its own shard of the data)."""
    done = _torchrun("unfreeze", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    weights = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in (0, 1)]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert not torch.equal(weights[0]["0.weight"], torch.load(tmp_path / "initial.pt",
                                                              weights_only=True)["0.weight"])
    assert "DistributedDataParallel rebuilt: 4 of 4 parameters need a gradient now (2 before)" \
        in done.stdout + done.stderr
