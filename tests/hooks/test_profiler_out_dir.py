"""ProfilerHook's out_dir is checked when the hook is built (as CheckpointHook's): a file, or a
folder that cannot be written, is one ConfigError before training; on the command line one
``error:`` line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import yaml
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner
from hookline.hooks import ProfilerHook


def test_an_out_dir_that_is_a_file_is_refused_when_the_hook_is_built(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match=r"^ProfilerHook out_dir '.*notes\.txt' is a file, not "
                                          r"a folder; choose another ProfilerHook out_dir$"):
        ProfilerHook(out_dir=tmp_path / "notes.txt")
    with pytest.raises(ConfigError, match=r"ProfilerHook out_dir '.*notes\.txt/traces' lies "
                                          r"under the file"):
        ProfilerHook(out_dir=str(tmp_path / "notes.txt" / "traces"))
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_writable_out_dir_still_gets_the_traces(tmp_path):
    hook = ProfilerHook(wait=0, warmup=1, active=1, activities=["cpu"], row_limit=0,
                        out_dir=tmp_path / "traces")
    x = torch.randn(16, 4)
    Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
           loss_fn=torch.nn.CrossEntropyLoss(),
           train_dataloader=DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=4),
           max_epochs=1, work_dir=tmp_path / "run", hooks=[hook],
           default_hooks={"progress": None, "logger": None}).train()
    assert hook.traces and all(p.parent == tmp_path / "traces" for p in hook.traces)


def test_the_default_folder_under_a_file_is_refused_before_training(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "profiler").write_text("mine")
    x = torch.randn(16, 4)
    runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(),
                    train_dataloader=DataLoader(TensorDataset(x, (x[:, 0] > 0).long()),
                                                batch_size=4),
                    max_epochs=1, work_dir=tmp_path / "run", hooks=[ProfilerHook()],
                    default_hooks={"progress": None, "logger": None})
    with pytest.raises(Exception, match="work_dir/profiler") as caught:
        runner.train()
    assert isinstance(getattr(caught.value, "original", caught.value), ConfigError)
    assert runner.iter == 0


def test_the_command_line_refuses_it_in_one_error_line_before_anything_is_written(tmp_path):
    config = {"model": {"type": "DigitsCNN"}, "loss_fn": {"type": "CrossEntropyLoss"},
              "optimizer": {"type": "Adam", "lr": 0.003},
              "train_dataloader": {"dataset": {"type": "DigitsDataset", "split": "train"},
                                   "batch_size": 32},
              "max_epochs": 1, "device": "cpu",
              "hooks": [{"type": "ProfilerHook", "out_dir": str(tmp_path / "run.yaml")}]}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = subprocess.run([sys.executable, "-m", "hookline", "train", "run.yaml", "--work-dir",
                           str(tmp_path / "work"), "--no-curves"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: hooks[0]: ProfilerHook out_dir"), \
        done.stderr
    assert "is a file, not a folder" in lines[0]
    assert not (tmp_path / "work").exists()
