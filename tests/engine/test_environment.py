"""The process a run lives in: which device a string means, and seeding every RNG."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from hookline import HOOKS, ConfigError
from hookline.engine.environment import resolve_device, seed_everything


def test_resolve_device_accepts_names_and_devices():
    assert resolve_device("cpu") == torch.device("cpu")
    device = torch.device("cpu")
    assert resolve_device(device) == device
    if torch.cuda.device_count() > 1:
        assert resolve_device("cuda:1") == torch.device("cuda", 1)


def test_a_device_this_machine_lacks_is_a_config_error_naming_what_it_has():
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(ConfigError) as info:
        resolve_device(f"cuda:{count}")
    assert f"device 'cuda:{count}'" in str(info.value)
    assert "available here: auto, cpu" in str(info.value)
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="device 'cuda' is not available"):
            resolve_device("cuda")


def test_auto_is_cpu_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_auto_is_the_current_cuda_device_with_cuda():
    assert resolve_device("auto") == torch.device("cuda", torch.cuda.current_device())


@pytest.mark.parametrize("bad", ["gpu", "tpu9", "cuda:x", "", 3.5])
def test_a_bad_device_is_a_config_error_listing_the_accepted_forms(bad):
    with pytest.raises(ConfigError, match="device must be 'auto', 'cpu', 'cuda' or 'cuda:N'"):
        resolve_device(bad)


def test_seed_everything_makes_torch_numpy_and_python_repeatable():
    def draw():
        return torch.randn(5), np.random.rand(3), random.random()

    seed_everything(7)
    first = draw()
    draw()  # move every generator on
    seed_everything(7)
    again = draw()
    assert torch.equal(first[0], again[0])
    assert np.array_equal(first[1], again[1]) and first[2] == again[2]
    seed_everything(8)
    other = draw()
    assert not torch.equal(first[0], other[0]) and first[2] != other[2]


def test_seed_everything_takes_seeds_beyond_numpys_range():
    seed_everything(2**40 + 3)
    a = np.random.rand(2)
    seed_everything(2**40 + 3)
    assert np.array_equal(a, np.random.rand(2))


@pytest.mark.parametrize("hook, argument", [("CheckpointHook", "out_dir"),
                                             ("TensorboardLoggerHook", "log_dir")])
def test_hook_output_folders_that_cannot_be_written_are_refused_when_the_hook_is_made(
        tmp_path, hook, argument):
    """Before: a checkpoint out_dir under /proc failed after a whole epoch of training, a
    TensorBoard log_dir there with a traceback from inside the writer."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("")
    for folder, message in ((a_file / "logs", "lies under the file"),
                            ("/proc/hookline-test", "cannot be written")):
        with pytest.raises(ConfigError, match=rf"{hook} {argument} '{folder}' {message}"):
            HOOKS.build({"type": hook, argument: str(folder)})
    assert HOOKS.build({"type": hook, argument: str(tmp_path / "new" / "folder")})
    assert not (tmp_path / "new").exists()  # checked, not made


@pytest.mark.parametrize("name, message", [
    ("a\x00b", "holds a NUL byte"),
    ("x" * 300, "cannot be used: File name too long"),
    ("ok/" + "y" * 300 + "/run", "is longer than the 255 bytes"),
])
def test_work_dirs_the_file_system_cannot_hold_are_one_config_error(tmp_path, name, message):
    from hookline.engine.environment import check_work_dir  # noqa: PLC0415
    with pytest.raises(ConfigError, match=message):
        check_work_dir(str(tmp_path / name))
    assert list(tmp_path.iterdir()) == []  # nothing made
