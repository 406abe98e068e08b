"""transform_inputs / transform_outputs."""

import pytest
import torch
from torch import nn

from hookline.core import ConfigError
from hookline.inspect import transform_inputs, transform_outputs

from .models import TwoInputNet, hook_state


def test_input_normalisation_and_removal():
    model = nn.Sequential(nn.Flatten(), nn.Identity())
    before = hook_state(model)
    mean, std = torch.tensor([[0.5]]), torch.tensor([[2.0]])
    with transform_inputs(model, lambda x: (x - mean) / std):
        assert torch.equal(model(torch.tensor([[4.5]])), torch.tensor([[2.0]]))
    assert hook_state(model) == before
    assert torch.equal(model(torch.tensor([[4.5]])), torch.tensor([[4.5]]))


def test_several_inputs_keywords_and_none_keeps_inputs():
    torch.manual_seed(0)
    model = TwoInputNet()
    image, extra = torch.randn(2, 1, 5, 5), torch.randn(2, 3)
    expected = model(image * 0, extra, scale=3.0)
    with transform_inputs(model, lambda a, b: (a * 0, b)):
        assert torch.allclose(model(image, extra, scale=3.0), expected)
    with transform_inputs(model, lambda a, b: None):
        assert torch.allclose(model(image, extra), model(image, extra))


def test_output_transform_keeps_gradients_flowing():
    lin = nn.Linear(3, 3)
    before = hook_state(lin)
    handle = transform_outputs(lin, lambda out: out * 2)
    x = torch.ones(1, 3, requires_grad=True)
    lin(x).sum().backward()
    assert torch.allclose(x.grad, 2 * lin.weight.sum(0, keepdim=True))
    handle.remove()
    assert handle.removed and hook_state(lin) == before


def test_prepend_and_errors():
    lin = nn.Identity()
    first = transform_outputs(lin, lambda out: out + 1)
    with first, transform_outputs(lin, lambda out: out * 10, prepend=True):
        assert float(lin(torch.tensor(1.0))) == 11.0
    with pytest.raises(ConfigError, match="nn.Module"):
        transform_inputs(lambda x: x, print)
    with pytest.raises(ConfigError, match="callable"):
        transform_outputs(lin, None)
