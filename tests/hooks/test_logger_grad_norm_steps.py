"""LoggerHook shows ``grad_norm`` only for optimizer steps since its last line: with gradient
accumulation, a line whose iterations did not step has none (not the previous step's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner


def records(tmp_path: Path, accumulate: int, interval: int, batches: int = 8) -> list[dict]:
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(4 * batches, 4), torch.randint(0, 2, (4 * batches,)))
    runner = Runner(torch.nn.Linear(4, 2), loss_fn=torch.nn.CrossEntropyLoss(),
                    optim_wrapper={"optimizer": {"type": "SGD", "lr": 0.1},
                                   "accumulative_counts": accumulate,
                                   "clip_grad": {"max_norm": 100.0}},
                    train_dataloader=DataLoader(data, batch_size=4), max_epochs=1,
                    work_dir=str(tmp_path), default_hooks={
                        "progress": None, "checkpoint": None,
                        "logger": {"type": "LoggerHook", "interval": interval}})
    norms: list[float] = []
    runner.on("after_train_iter", lambda r: norms.append(
        float(r.message_hub.latest("train/grad_norm")) if "train/grad_norm" in r.message_hub
        else float("nan")))
    runner.train()
    lines = next(tmp_path.rglob("metrics.jsonl")).read_text().splitlines()
    out = [json.loads(line) for line in lines if json.loads(line).get("mode") == "train"]
    for record, norm in zip(out, norms[interval - 1::interval]):
        record["_latest"] = norm
    return out


def test_grad_norm_is_logged_only_on_iterations_that_stepped(tmp_path):
    logged = records(tmp_path, accumulate=2, interval=1)
    assert [r["iter"] for r in logged if "grad_norm" in r] == [2, 4, 6, 8]
    for r in logged:
        if "grad_norm" in r:
            assert r["grad_norm"] == pytest.approx(r["_latest"])


def test_a_line_averages_only_the_steps_since_the_last_line(tmp_path):
    logged = records(tmp_path, accumulate=3, interval=2)  # steps at 3, 6, 8 (last group)
    assert [(r["iter"], "grad_norm" in r) for r in logged] == [
        (2, False), (4, True), (6, True), (8, True)]
    for r in logged[1:]:  # each line: its own step's norm, not a mean with an older one
        assert r["grad_norm"] == pytest.approx(r["_latest"])
