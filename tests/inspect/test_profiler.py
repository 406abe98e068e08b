"""LayerProfiler: per-layer forward times, their sum, and their share of the model's forward time.

No test bounds a measured time or how close two measurements come: on a loaded machine wall-clock
times swing several-fold. The tests check what holds at any speed: times are positive, add up to
the totals reported, and an interval nested in another is no longer than it.
"""

import pytest
import torch
from torch import nn

from hookline.inspect import LayerProfiler

from .models import HeavyNet, hook_state


def test_layer_times_are_positive_and_add_up_to_the_totals_reported():
    model = HeavyNet().eval()
    x = torch.randn(2, 16, 24, 24)
    with torch.no_grad(), LayerProfiler(model) as prof:
        for _ in range(2):
            model(x)
    times = prof.report()
    assert sorted(t.name for t in times) == [str(i) for i in range(len(model))]  # every leaf, once
    assert all(t.calls == 2 and t.total_ms > 0 for t in times)
    assert prof.forward_calls == 2
    assert prof.layers_ms == pytest.approx(sum(t.total_ms for t in times))
    # the layers run one after another inside the model's forward, so their times fit in it
    assert 0 < prof.layers_ms <= prof.forward_ms
    assert all(t.percent == pytest.approx(100.0 * t.total_ms / prof.forward_ms) for t in times)
    assert sum(t.percent for t in times) == pytest.approx(100.0 * prof.layers_ms / prof.forward_ms)


def test_report_is_sorted_aggregates_calls_and_hooks_are_removed():
    model = nn.Sequential(nn.Linear(32, 512), nn.ReLU(), nn.Linear(512, 512), nn.Linear(512, 2))
    before = hook_state(model)
    with LayerProfiler(model) as prof:
        for _ in range(3):
            model(torch.randn(64, 32))
    assert hook_state(model) == before
    times = prof.report()
    assert sorted(t.name for t in times) == ["0", "1", "2", "3"]
    assert all(t.calls == 3 for t in times) and prof.forward_calls == 3
    assert [t.total_ms for t in times] == sorted((t.total_ms for t in times), reverse=True)
    assert all(t.mean_ms * 3 == pytest.approx(t.total_ms) for t in times)
    assert prof.layers_ms <= prof.forward_ms
    assert 0 < sum(t.percent for t in times) <= 100.0
    table = prof.table()
    assert "of model forward" in table and "Linear" in table and "% of forward" in table
    prof.reset()
    assert prof.report() == [] and prof.forward_ms == 0.0


def test_types_select_non_leaf_modules():
    model = nn.Sequential(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), nn.Linear(4, 1))
    with LayerProfiler(model, types=[nn.Sequential]) as prof:
        model(torch.randn(2, 4))
    times = {t.name: t for t in prof.report()}
    assert sorted(times) == ["0", "Sequential"]  # the model itself is named by its class
    assert times["Sequential"].total_ms >= times["0"].total_ms


def test_warmup_calls_are_not_timed_and_std_describes_the_spread():
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    seen = []
    model[0].register_forward_hook(lambda m, a, out: seen.append(1))
    with torch.no_grad(), LayerProfiler(model, warmup=2) as prof:
        for _ in range(5):
            model(torch.randn(4, 32))
    times = {t.name: t for t in prof.report()}
    assert len(seen) == 5                                  # all five calls ran ...
    assert prof.forward_calls == 3 and all(t.calls == 3 for t in times.values())   # ... three were timed
    assert all(t.std_ms >= 0 for t in times.values())
    assert "std ms" in prof.table()


def test_std_is_the_spread_of_the_per_call_times(monkeypatch):
    """Fake clock: each call of the layer takes 1, 2, then 3 ms."""
    from hookline.inspect import profiler  # noqa: PLC0415 - the module whose clock is replaced

    ticks = iter([0.0, 0.0, 0.001, 0.001,  0.010, 0.010, 0.012, 0.012,  0.020, 0.020, 0.023, 0.023])
    monkeypatch.setattr(profiler.time, "perf_counter", lambda: next(ticks))
    layer = nn.Identity()
    with LayerProfiler(layer, types=[nn.Identity]) as prof:
        for _ in range(3):
            layer(torch.zeros(1))
    (timing,) = prof.report()
    assert timing.calls == 3 and timing.mean_ms == pytest.approx(2.0)
    assert timing.std_ms == pytest.approx((2 / 3) ** 0.5)


def test_a_negative_warmup_is_a_config_error():
    from hookline.core import ConfigError  # noqa: PLC0415

    with pytest.raises(ConfigError, match="warmup must be an int >= 0"):
        LayerProfiler(nn.Linear(2, 2), warmup=-1)


@pytest.mark.parametrize("options, message", [
    ({"types": ["Linear"]}, r"types must be nn.Module classes \(nn.Linear, or a list of them\)"),
    ({"types": [nn.Linear, int]}, "types must be nn.Module classes"),
    ({"device": "tpu"}, "device must be 'cpu', 'cuda' or 'cuda:N', got 'tpu'"),
])
def test_layer_profiler_mistakes_are_config_errors_before_any_hook(options, message):
    from hookline.core import ConfigError  # noqa: PLC0415

    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    with pytest.raises(ConfigError, match=message):
        LayerProfiler(net, **options)
    assert hook_state(net) == hook_state(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")
def test_layer_profiler_on_cuda_without_a_gpu_is_a_config_error():
    from hookline.core import ConfigError  # noqa: PLC0415

    with pytest.raises(ConfigError, match="this machine has no CUDA device"):
        LayerProfiler(nn.Linear(2, 2), device="cuda:0")


def test_one_module_class_and_warmup_0_times_every_call():
    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    with LayerProfiler(net, types=nn.Linear) as prof:  # one class, not a list
        net[0](torch.zeros(1, 4))  # before the model's first call: timed too (warmup=0)
        net(torch.zeros(1, 4))
    calls = {layer.name: layer.calls for layer in prof.report()}
    assert calls == {"0": 2, "2": 1}


class _Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
        self.head = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.attn(x, x, x, need_weights=False)[0])


def test_a_module_whose_children_never_run_is_timed_as_a_leaf():
    model = _Attention().eval()
    with LayerProfiler(model) as prof:
        for _ in range(2):
            model(torch.randn(2, 5, 16))
    times = {t.name: t for t in prof.report()}
    assert sorted(times) == ["attn", "head"]  # MHA's out_proj never runs: MHA is the leaf
    assert times["attn"].type_name == "MultiheadAttention" and times["attn"].calls == 2
    assert prof.layers_ms <= prof.forward_ms


def test_a_forward_that_raises_leaves_a_consistent_table():
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(5, 5))
    with LayerProfiler(model) as prof:
        for _ in range(3):
            with pytest.raises(RuntimeError):
                model(torch.randn(2, 4))
    assert [(t.name, t.calls) for t in prof.report()] == [("0", 3)]
    assert prof.forward_calls == 3 and 0 < prof.layers_ms <= prof.forward_ms
    assert not any(prof._starts.values())  # noqa: SLF001 - no start left behind by the failed calls
