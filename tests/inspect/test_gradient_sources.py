"""GradientMonitor on tensors and parameter lists, and its signed min / max / abs_max."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hookline.core import ConfigError
from hookline.inspect import GradientMonitor

from .models import MLP, SmallResNet


def test_a_single_tensor_a_list_named_pairs_and_a_dict():
    torch.manual_seed(0)
    model = MLP((4, 8, 2))
    weight, bias = model[0].weight, model[2].bias
    sources = [weight, [weight, bias], [("first", weight), ("last", bias)], {"first": weight, "last": bias},
               list(model[2].named_parameters())]
    expected_names = [["tensor"], ["0", "1"], ["first", "last"], ["first", "last"], ["weight", "bias"]]
    for source, names in zip(sources, expected_names):
        with GradientMonitor(source) as monitor:
            model.zero_grad()
            model(torch.randn(5, 4)).pow(2).sum().backward()
        report = monitor.report()
        assert list(report) == names and monitor.step == 1
        tensors = source.values() if isinstance(source, dict) else source
        tensors = [tensors] if isinstance(tensors, torch.Tensor) else [t[1] if isinstance(t, tuple) else t
                                                                      for t in tensors]
        for name, tensor in zip(names, tensors):
            assert report[name]["norm"] == pytest.approx(float(tensor.grad.norm()), rel=1e-5)


def test_an_activation_is_monitored_through_its_gradient():
    torch.manual_seed(0)
    lin = nn.Linear(4, 3)
    x = torch.randn(6, 4)
    hidden = torch.tanh(lin(x))
    grads = {}
    hidden.register_hook(lambda g: grads.setdefault("hidden", g.clone()))
    with GradientMonitor({"hidden": hidden, "weight": lin.weight}, explode=10.0) as monitor:
        (hidden * torch.arange(3.0)).sum().backward()
    stats = monitor.report()["hidden"]
    g = grads["hidden"]
    assert stats["norm"] == pytest.approx(float(g.norm()), rel=1e-5)
    assert (stats["min"], stats["max"]) == (pytest.approx(float(g.min())), pytest.approx(float(g.max())))
    assert monitor.step == 1 and list(monitor.report()) == ["hidden", "weight"]


def test_signed_min_and_max_and_abs_max():
    p = nn.Parameter(torch.zeros(4))
    with GradientMonitor([p]) as monitor:
        (p * torch.tensor([-3.0, 1.0, 2.0, 0.5])).sum().backward()
    stats = monitor.report()["0"]
    assert (stats["min"], stats["max"], stats["abs_max"]) == (-3.0, 2.0, 3.0)
    assert monitor.history("0", "abs_max") == [(0, 3.0)] and monitor.history("0", "min") == [(0, -3.0)]
    assert "abs_max" in monitor.table() and "min" in monitor.table()


def test_nan_and_inf_alerts_still_come_from_abs_max():
    p = nn.Parameter(torch.zeros(3))
    with GradientMonitor([p]) as monitor:
        (p * torch.tensor([1.0, float("nan"), 2.0])).sum().backward()
        p.grad = None
        (p * torch.tensor([1.0, float("-inf"), 2.0])).sum().backward()
    assert [kind for _, _, kind in monitor.alerts] == ["nan", "inf"]
    assert monitor.report()["0"]["min"] == float("-inf")


def test_the_in_place_resnet_parameter_list():
    model = SmallResNet()
    convs = [m.weight for m in model.modules() if isinstance(m, nn.Conv2d)]
    with GradientMonitor(convs) as monitor:
        model(torch.randn(2, 3, 16, 16)).sum().backward()
    assert len(monitor.report()) == len(convs)


@pytest.mark.parametrize("source, message", [
    (torch.zeros(3), "does not require grad"),
    ([nn.Parameter(torch.zeros(2)), "bias"], "'1' is not a tensor, got str"),
    ({"a": 3}, "'a' is not a tensor, got int"),
    ([("a", nn.Parameter(torch.zeros(1))), ("a", nn.Parameter(torch.zeros(1)))], "names must be unique"),
    ([], "no parameter that requires grad"),
    (3, "expects an nn.Module, a tensor"),
])
def test_bad_sources_are_config_errors(source, message):
    with pytest.raises(ConfigError, match=message):
        GradientMonitor(source)
