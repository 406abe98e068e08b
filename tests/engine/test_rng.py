"""RNG state capture and restore, through a real torch.save / weights_only load."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from hookline.engine.checkpoint import check_weights_only, load_checkpoint_file, make_meta, save_atomic
from hookline.engine.rng import get_rng_state, set_rng_state


def draw() -> tuple:
    return (
        [random.random() for _ in range(3)],
        random.gauss(0.0, 1.0),  # leaves a cached gauss_next behind
        np.random.rand(3).tolist(),
        float(np.random.standard_normal()),  # leaves numpy's cached gaussian behind
        torch.rand(3).tolist(),
        torch.randint(0, 1000, (4,)).tolist(),
    )


def test_round_trip_through_weights_only_file(tmp_path: Path) -> None:
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    draw()  # move every generator off its seed state, with cached gaussians pending
    state = get_rng_state()
    check_weights_only(state)
    path = save_atomic({"meta": make_meta(0, 0), "rng": state}, tmp_path / "rng.pth")
    expected = draw()

    random.seed(99)
    np.random.seed(99)
    torch.manual_seed(99)
    assert draw() != expected

    loaded = load_checkpoint_file(path)["rng"]
    set_rng_state(loaded)
    assert draw() == expected


def test_state_holds_only_plain_values() -> None:
    state = get_rng_state(include_cuda=False)
    assert set(state) == {"python", "numpy", "torch"}
    assert state["numpy"]["keys"].dtype == torch.int64 and state["numpy"]["keys"].shape == (624,)
    assert state["python"]["internal"].shape == (625,)
    check_weights_only(state)


def test_partial_state_restores_only_given_generators() -> None:
    torch.manual_seed(0)
    state = {"torch": get_rng_state()["torch"]}
    t = torch.rand(2)
    random.seed(5)
    py = random.random()
    random.seed(5)
    set_rng_state(state)
    assert torch.equal(torch.rand(2), t)
    assert random.random() == py  # python RNG untouched


def test_bad_states_raise_value_error() -> None:
    with pytest.raises(ValueError, match="expected a dict"):
        set_rng_state([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown entries"):
        set_rng_state({"jax": 1})
    with pytest.raises(ValueError, match="malformed"):
        set_rng_state({"python": {"version": 3}})
    with pytest.raises(ValueError, match="must be a tensor"):
        set_rng_state({"torch": [1, 2, 3]})


def test_cuda_state_without_cuda_warns(caplog: pytest.LogCaptureFixture) -> None:
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    with caplog.at_level(logging.WARNING, logger="hookline"):
        set_rng_state({"cuda": [torch.zeros(16, dtype=torch.uint8)]})
    assert "CUDA is not available" in caplog.text


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_round_trip(tmp_path: Path) -> None:
    torch.cuda.manual_seed_all(7)
    torch.rand(3, device="cuda")
    state = get_rng_state()
    assert len(state["cuda"]) == torch.cuda.device_count()
    path = save_atomic({"meta": make_meta(0, 0), "rng": state}, tmp_path / "rng.pth")
    expected = torch.rand(5, device="cuda").tolist()
    torch.cuda.manual_seed_all(99)
    set_rng_state(load_checkpoint_file(path)["rng"])
    assert torch.rand(5, device="cuda").tolist() == expected
