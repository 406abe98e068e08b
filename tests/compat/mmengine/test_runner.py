"""hookline.compat.mmengine.runner: loops, priorities and checkpoint helpers."""

from __future__ import annotations

import pytest
import torch

import hookline
from hookline.compat.mmengine.runner import (
    EpochBasedTrainLoop,
    Runner,
    get_priority,
    get_state_dict,
    load_checkpoint,
    save_checkpoint,
    weights_to_cpu,
)

from ..conftest import make_runner


def test_names_are_hooklines():
    assert Runner is hookline.Runner and get_priority("very_high") == 10
    assert isinstance(make_runner().train_loop, EpochBasedTrainLoop)


def test_load_checkpoint_reads_hookline_and_bare_files_with_revised_keys(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1)
    runner.train()
    path = runner.save_checkpoint("saved.pth")
    model = torch.nn.Linear(4, 2)
    checkpoint = load_checkpoint(model, path)
    assert torch.equal(model.weight, runner.model.weight) and "meta" in checkpoint
    bare = tmp_path / "bare.pth"
    save_checkpoint({"module." + k: v for k, v in weights_to_cpu(get_state_dict(model)).items()},
                    bare)
    fresh = torch.nn.Linear(4, 2)
    load_checkpoint(fresh, bare, strict=True)
    assert torch.equal(fresh.weight, model.weight)
    with pytest.raises(RuntimeError, match="Missing key"):
        load_checkpoint(torch.nn.Linear(4, 2), bare, strict=True, revise_keys=[])
