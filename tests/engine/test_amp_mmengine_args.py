"""``AmpOptimWrapper`` takes MMEngine's arguments: ``use_fsdp=False`` (True is one clear
error), the ``dtype`` names MMEngine accepts (``float32`` / ``float64`` run the forward at
full precision, as torch's autocast does for a dtype it cannot cast to), and MMEngine's
``cast_dtype`` attribute."""

from __future__ import annotations

import pytest
import torch

from hookline import ConfigError
from hookline.compat.mmengine.optim import AmpOptimWrapper


def sgd(model: torch.nn.Module) -> torch.optim.SGD:
    return torch.optim.SGD(model.parameters(), lr=0.1)


def test_use_fsdp_false_is_accepted_and_true_is_refused():
    model = torch.nn.Linear(2, 1)
    wrapper = AmpOptimWrapper(optimizer=sgd(model), use_fsdp=False)
    assert wrapper.dtype == torch.bfloat16 and wrapper.cast_dtype is None  # CPU's default
    with pytest.raises(ConfigError, match="use_fsdp=True: FSDP's ShardedGradScaler is not "
                                          "supported by hookline"):
        AmpOptimWrapper(optimizer=sgd(model), use_fsdp=True)


@pytest.mark.parametrize(("dtype", "expected"), [("float32", torch.float32),
                                                 ("float64", torch.float64),
                                                 (torch.float32, torch.float32),
                                                 ("bfloat16", torch.bfloat16)])
def test_mmengines_dtype_names(dtype, expected):
    model = torch.nn.Linear(2, 1)
    wrapper = AmpOptimWrapper(optimizer=sgd(model), dtype=dtype)
    assert wrapper.dtype == expected and wrapper.cast_dtype == expected
    assert wrapper.loss_scaler is None  # only float16 scales the loss
    x = torch.randn(3, 2)
    with wrapper.optim_context(model):
        out = model(x)
    want = expected if expected == torch.bfloat16 else torch.float32  # full precision
    assert out.dtype == want
    if expected != torch.bfloat16:
        torch.testing.assert_close(out, model(x), rtol=0, atol=0)


def test_float32_inside_an_outer_autocast_turns_it_off_as_torch_does():
    model = torch.nn.Linear(2, 1)
    wrapper = AmpOptimWrapper(optimizer=sgd(model), dtype="float32")
    with torch.autocast("cpu", dtype=torch.bfloat16), wrapper.autocast():
        assert model(torch.randn(3, 2)).dtype == torch.float32


def test_a_dtype_that_is_not_a_float_type_is_refused():
    with pytest.raises(ConfigError, match="dtype must be one of"):
        AmpOptimWrapper(optimizer=sgd(torch.nn.Linear(2, 1)), dtype=torch.int8)
