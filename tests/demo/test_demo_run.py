"""The demo end to end: ``hookline train`` with no config, as ``make demo`` runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

from hookline.app.config import load_config
from hookline.app.run_dirs import run_dirs
from hookline.demo.registry import demo_config_path

SCRIPT = Path(sys.executable).with_name("hookline")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "hookline.cli"]


def test_demo_trains_to_95_percent_and_fills_its_work_dir(tmp_path):
    result = subprocess.run([*COMMAND, "train", "--work-dir", "demo"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    [work_dir] = run_dirs(tmp_path / "demo")  # demo/<timestamp>/: this run's folder
    records = [json.loads(line) for line in (work_dir / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in records if r["mode"] == "val"]
    assert [r["epoch"] for r in val] == list(range(1, 11))
    assert val[-1]["accuracy"] >= 0.95
    train = [r for r in records if r["mode"] == "train"]
    assert train[-1]["iter"] == 450 and train[-1]["loss"] < train[0]["loss"] / 5

    # the final lines say how it went and where everything is
    summary, outputs = result.stdout.strip().splitlines()[-2:]
    assert summary.startswith("trained 10/10 epochs (450 iterations) in ")
    assert f"accuracy {val[-1]['accuracy']:.4f}" in summary
    assert outputs.startswith(f"outputs in demo/{work_dir.name}: config.yaml, log.txt, metrics.jsonl, "
                              "checkpoints (")
    assert outputs.endswith("curves.png")

    # resolved config, log, checkpoints (last two + best), curves
    expected = {**load_config(demo_config_path()), "work_dir": "demo", "default_hooks": {
        "logger": {"type": "LoggerHook", "interval": 15},
        "checkpoint": {"type": "CheckpointHook", "interval": 1, "max_keep_ckpts": 2,
                       "save_best": "accuracy"}}}
    assert load_config(work_dir / "config.yaml") == expected
    assert "Epoch(val) [10]" in (work_dir / "log.txt").read_text()
    checkpoints = sorted(p.name for p in work_dir.glob("*.pth"))
    best = [name for name in checkpoints if name.startswith("best_accuracy_epoch_")]
    assert {"epoch_9.pth", "epoch_10.pth"} <= set(checkpoints) and len(best) == 1
    assert "epoch_8.pth" not in checkpoints  # max_keep_ckpts: 2
    final = torch.load(work_dir / "epoch_10.pth", weights_only=True)
    assert final["meta"]["config"]["model"] == {"type": "DigitsCNN"}
    png = (work_dir / "curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
