"""Ported hooks on two processes (``torchrun --nproc_per_node 2`` on gloo): an mmpose-style
SyncNormHook averages BatchNorm statistics over the ranks, and the compat collectives
(``mmengine.dist``, mmcv's ``allreduce_params``) give the cross-rank results."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

from ..gloo_abort import run_torchrun

SCRIPT = Path(__file__).parent / "dist_scripts" / "sync_hooks.py"


@pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                    reason="torch.distributed with gloo is not available")
def test_sync_norm_hook_and_collectives_on_two_ranks(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(SCRIPT), "--out", str(tmp_path)]
    proc = run_torchrun(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"result_rank{r}.json").read_text()) for r in (0, 1)]
    before = [r["before"] for r in ranks]
    after = [r["after"] for r in ranks]
    assert before[0]["mean"] != before[1]["mean"]  # each rank saw its own shard
    for key in ("mean", "var"):
        expected = [(a + b) / 2 for a, b in zip(before[0][key], before[1][key])]
        assert after[0][key] == pytest.approx(expected, abs=1e-6)
        assert after[1][key] == after[0][key]
    for rank, result in enumerate(ranks):
        assert result["world"] == 2 and result["mean"] == 1.5 and result["max"] == 2.0
        assert result["gathered"] == [{"rank": 0}, {"rank": 1}] and result["broadcast"] == 2.0
        assert result["allreduce_params"] == [0.5, 0.5]
        assert result["collected"] == (["r0a", "r1a", "r0b"] if rank == 0 else None)
    # hookline's exit handler destroyed the process group and joined gloo's worker threads
    # before the interpreter finalised: a worker that let go of a collective's tensors only
    # then could not take the interpreter lock, and aborted the process
    for rank in (0, 1):
        threads = tmp_path / f"threads_rank{rank}.txt"
        if threads.exists():  # Linux: /proc/self/task
            assert threads.read_text() == "1", f"rank {rank}: threads left at exit"
