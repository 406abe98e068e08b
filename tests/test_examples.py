"""Every script and config under examples/ runs as its docstring says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hookline.app.run_dirs import read_last_run

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


@pytest.mark.parametrize("script", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_example_script_runs(script, tmp_path):
    result = subprocess.run([sys.executable, str(script), str(tmp_path / "work")], cwd=tmp_path,
                            env=ENV, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "work" / "log.txt").is_file()


@pytest.mark.parametrize("config", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_example_config_trains(config, tmp_path):
    hookline = Path(sys.executable).with_name("hookline")
    result = subprocess.run([str(hookline), "train", str(config), "--work-dir", str(tmp_path),
                             "--set", "max_epochs=2"], cwd=tmp_path, env=ENV,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run_dir = read_last_run(tmp_path)  # the run's own folder under --work-dir
    assert (run_dir / "config.yaml").is_file() and list(run_dir.glob("best_accuracy_*.pth"))
    assert list((run_dir / "tf_logs").glob("events.out.tfevents.*"))
