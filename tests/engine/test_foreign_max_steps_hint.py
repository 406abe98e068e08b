"""Lightning's max_steps counts optimizer steps, hookline's max_iters batches: the hint for
Runner(max_steps=...) says how gradient accumulation converts one into the other."""

from __future__ import annotations

import pytest
import torch

from hookline import Runner
from hookline.core import ConfigError


def test_max_steps_hint_mentions_accumulation(tmp_path):
    with pytest.raises(ConfigError) as info:
        Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1}, max_steps=10,
               work_dir=tmp_path)
    message = str(info.value)
    assert "max_iters" in message
    assert "max_iters = max_steps x accumulative_counts" in message
