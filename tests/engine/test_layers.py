"""The engine stands alone: it imports only ``hookline.core`` (plus torch), never a layer above."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ABOVE = ("hookline.hooks", "hookline.inspect", "hookline.demo", "hookline.cli", "hookline.app",
         "hookline.compat", "hookline.integrations")


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, cwd=SRC.parent)


def test_engine_trains_with_the_layers_above_it_blocked(tmp_path):
    """``sys.modules[name] = None`` makes any import of those layers fail: the Runner still
    builds, trains, validates and checkpoints with explicitly given hooks."""
    result = run_python(f"""
        import json, sys
        for name in {ABOVE!r}:
            sys.modules[name] = None
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        from hookline.engine import Hook, Runner

        class Count(Hook):
            def __init__(self):
                self.iters = 0
            def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
                self.iters += 1

        torch.manual_seed(0)
        data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
        count = Count()
        runner = Runner(torch.nn.Linear(4, 2), optimizer={{"type": "SGD", "lr": 0.1}},
                        loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2,
                        train_dataloader=DataLoader(data, batch_size=8),
                        val_dataloader=DataLoader(data, batch_size=16),
                        metrics={{"acc": "accuracy"}}, work_dir={str(tmp_path)!r},
                        hooks=[count], default_hooks={{key: None for key in
                        ("param_scheduler", "timer", "logger", "checkpoint", "sampler_seed",
                         "progress")}})
        runner.train()
        runner.save_checkpoint("final.pth")
        loaded = sorted(m for m in sys.modules if m.startswith("hookline.")
                        and sys.modules[m] is not None)
        print(json.dumps({{"iters": count.iters, "epoch": runner.epoch,
                          "acc": runner.message_hub.info["val_metrics"]["acc"],
                          "loaded": loaded}}))
    """)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["iters"] == 8 and out["epoch"] == 2 and 0 <= out["acc"] <= 1
    assert (tmp_path / "final.pth").is_file()
    assert not [m for m in out["loaded"] if m.startswith(ABOVE)]


def test_a_default_hook_that_cannot_be_found_is_one_clear_error(tmp_path):
    result = run_python(f"""
        import sys
        sys.modules["hookline.hooks"] = None
        import torch
        from hookline.core import ConfigError
        from hookline.engine import Runner
        try:
            Runner(torch.nn.Linear(2, 1), work_dir={str(tmp_path)!r})
        except ConfigError as exc:
            print("ConfigError:", exc)
    """)
    assert result.returncode == 0, result.stderr
    assert "ConfigError: unknown hook type 'ParamSchedulerHook'" in result.stdout
    assert "could not import hookline.hooks" in result.stdout


@pytest.mark.parametrize("layer", ["hookline.engine", "hookline.core"])
def test_importing_a_layer_loads_nothing_above_it(layer):
    result = run_python(f"""
        import json, sys
        import {layer}
        print(json.dumps({{"loaded": sorted(m for m in sys.modules if m.startswith("hookline")),
                          "torch": "torch" in sys.modules}}))
    """)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert layer in out["loaded"] and not [m for m in out["loaded"] if m.startswith(ABOVE)]
    assert out["torch"] == (layer == "hookline.engine")
