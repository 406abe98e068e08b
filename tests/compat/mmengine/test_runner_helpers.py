"""mmengine.runner's autocast, set_random_seed and find_latest_checkpoint."""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest
import torch

from hookline import ConfigError
from hookline.compat.mmengine.runner import autocast, find_latest_checkpoint, set_random_seed
from hookline.compat.mmengine.runner.amp import autocast as amp_autocast
from hookline.compat.mmengine.runner.utils import set_random_seed as utils_seed

from ..conftest import make_runner


def test_the_top_level_names_are_the_submodules():
    assert autocast is amp_autocast and set_random_seed is utils_seed


def test_autocast_on_the_cpu_is_bfloat16_and_can_be_disabled():
    layer = torch.nn.Linear(2, 2)
    with autocast(device_type="cpu"):
        assert torch.is_autocast_enabled("cpu")
        assert layer(torch.ones(1, 2)).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")
    with autocast(device_type="cpu", enabled=False):
        assert layer(torch.ones(1, 2)).dtype == torch.float32
    with autocast(device_type="cpu", dtype=torch.bfloat16, cache_enabled=False):
        assert not torch.is_autocast_cache_enabled()
    assert torch.is_autocast_cache_enabled()


def test_autocast_refuses_what_mmengine_refuses():
    with pytest.raises(ConfigError, match="only torch.bfloat16"), autocast("cpu", torch.float16):
        pass
    with pytest.raises(ConfigError, match="device_type must be 'cuda', 'cpu' or 'mps'"), \
            autocast(device_type="xpu"):
        pass
    with autocast(device_type="xpu", enabled=False):  # MMEngine: a no-op when disabled
        pass


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_autocast_on_cuda_defaults_to_torchs_dtype():
    with autocast():
        out = torch.nn.Linear(2, 2).cuda()(torch.ones(1, 2, device="cuda"))
    assert out.dtype == torch.get_autocast_dtype("cuda")


def test_set_random_seed_seeds_everything_and_returns_the_seed():
    assert set_random_seed(5) == 5
    draws = (random.random(), np.random.rand(), torch.rand(1).item())
    set_random_seed(5)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == draws
    assert set_random_seed(5, diff_rank_seed=True) == 5  # rank 0
    drawn = set_random_seed()
    assert isinstance(drawn, int) and 0 <= drawn < 2**31


def test_set_random_seed_deterministic():
    before = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark,
              torch.are_deterministic_algorithms_enabled())
    try:
        set_random_seed(0, deterministic=True)
        assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
        assert torch.are_deterministic_algorithms_enabled()
    finally:
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = before[:2]
        torch.use_deterministic_algorithms(before[2])


def test_find_latest_checkpoint_of_a_hookline_run(tmp_path):
    assert find_latest_checkpoint(tmp_path) is None
    runner = make_runner(tmp_path, default_hooks={"checkpoint": {"type": "CheckpointHook",
                                                                 "interval": 1}})
    runner.train()
    found = find_latest_checkpoint(str(tmp_path))
    assert isinstance(found, str) and found.endswith("epoch_2.pth")
    assert (tmp_path / "epoch_2.pth").is_file() and found == str(tmp_path / "epoch_2.pth")


def test_find_latest_checkpoint_reads_mmengines_pointer_and_takes_the_newer(tmp_path):
    mmengine_pointer, hookline_pointer = tmp_path / "last_checkpoint", tmp_path / "latest"
    mmengine_pointer.write_text(str(tmp_path / "iter_100.pth"))
    assert find_latest_checkpoint(tmp_path) == str(tmp_path / "iter_100.pth")
    hookline_pointer.write_text("epoch_3.pth\n")
    now = time.time()
    os.utime(mmengine_pointer, (now - 10, now - 10))
    assert find_latest_checkpoint(tmp_path) == str(tmp_path / "epoch_3.pth")
    os.utime(hookline_pointer, (now - 20, now - 20))
    assert find_latest_checkpoint(tmp_path) == str(tmp_path / "iter_100.pth")
