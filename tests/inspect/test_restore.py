"""Every tool leaves every module's and tensor's hook tables exactly as it found them,
and keeps no autograd graph alive."""

import gc
import weakref

import pytest
import torch
from torch import nn

from hookline.inspect import (
    ActivationStats,
    FeatureExtractor,
    GradientMonitor,
    HookManager,
    LayerProfiler,
    clip_gradients,
    edit_gradients,
    transform_inputs,
    transform_outputs,
)

from .models import SmallResNet, hook_state


def _manager(model):
    hooks = HookManager(model)
    hooks.register("layer*", lambda m, a, o: None)
    hooks.register(nn.Conv2d, lambda m, gi, go: None, kind="backward")
    hooks.register("fc", lambda g: None, kind="tensor")
    return hooks


TOOLS = {
    "HookManager": _manager,
    "FeatureExtractor": lambda m: FeatureExtractor(m, ["layer1", "layer3.1.bn2", "fc"], clone=True),
    "GradientMonitor": GradientMonitor,
    "ActivationStats": ActivationStats,
    "LayerProfiler": LayerProfiler,
    "clip_gradients": lambda m: clip_gradients(m, max_norm=1.0, max_value=0.1),
    "edit_gradients": lambda m: edit_gradients(m, lambda g: g * 0.5),
    "transform_inputs": lambda m: transform_inputs(m, lambda x: x * 2),
    "transform_outputs": lambda m: transform_outputs(m.layer2, lambda out: out + 1),
}


@pytest.mark.parametrize("name", TOOLS)
def test_with_block_restores_every_hook_table_and_keeps_no_graph(name):
    torch.manual_seed(0)
    model = SmallResNet().train()
    leaf = torch.randn(2, 3, 8, 8, requires_grad=True)
    before = hook_state(model, leaf)
    with TOOLS[name](model):
        x = leaf * 1.0  # kept alive only by the autograd graph once the forward is done
        ref = weakref.ref(x)
        out = model(x)
        del x
        out.sum().backward()
        del out
        model(torch.randn(1, 3, 8, 8))  # a forward that is never backpropagated
    gc.collect()
    assert ref() is None, f"{name} kept the autograd graph alive"
    assert hook_state(model, leaf) == before
