"""LayerProfiler on a CUDA device: CUDA events, read once at the end. Skips without a GPU."""

import pytest
import torch
from torch import nn

from hookline.inspect import LayerProfiler

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _convnet() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(64, 10)).cuda().eval()


def test_cuda_events_time_every_layer_inside_the_forward():
    model = _convnet()
    inputs = torch.randn(8, 3, 32, 32, device="cuda")
    with torch.no_grad(), LayerProfiler(model, warmup=1) as profiler:
        for _ in range(4):
            model(inputs)
    times = profiler.report()
    assert profiler.device.type == "cuda"
    assert profiler.forward_calls == 3  # the warm-up call is not timed
    assert sorted(t.name for t in times) == [str(i) for i in range(len(model))]
    assert all(t.calls == 3 and t.total_ms > 0 for t in times)
    assert 0 < profiler.layers_ms <= profiler.forward_ms


def test_synchronize_mode_times_the_same_layers():
    model = _convnet()
    inputs = torch.randn(8, 3, 32, 32, device="cuda")
    with torch.no_grad(), LayerProfiler(model, synchronize=True) as profiler:
        model(inputs)
    assert {t.name for t in profiler.report()} == {str(i) for i in range(len(model))}
    assert 0 < profiler.layers_ms <= profiler.forward_ms
