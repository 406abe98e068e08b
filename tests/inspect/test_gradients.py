"""GradientMonitor, clip_gradients and edit_gradients."""

import pytest
import torch
from torch import nn

from hookline.core import ConfigError
from hookline.inspect import GradientMonitor, clip_gradients, edit_gradients
from hookline.inspect import gradients as gradients_module

from .models import MLP, SmallResNet, hook_state


def _step(model, x=None, scale=1.0):
    x = torch.randn(8, 16) if x is None else x
    model.zero_grad()
    (model(x).sum() * scale).backward()


def test_report_holds_norm_mean_std_min_max_and_abs_max_of_each_gradient():
    torch.manual_seed(0)
    model = MLP()
    with GradientMonitor(model) as monitor:
        _step(model)
    report = monitor.report()
    assert list(report) == [n for n, _ in model.named_parameters()]
    for name, param in model.named_parameters():
        g = param.grad
        stats = report[name]
        assert stats["step"] == 0
        assert stats["norm"] == pytest.approx(float(g.norm()), rel=1e-5)
        assert stats["mean"] == pytest.approx(float(g.mean()), rel=1e-4, abs=1e-8)
        assert stats["std"] == pytest.approx(float(g.std(correction=0)), rel=1e-4)
        assert stats["min"] == pytest.approx(float(g.min()), rel=1e-6)
        assert stats["max"] == pytest.approx(float(g.max()), rel=1e-6)
        assert stats["abs_max"] == pytest.approx(float(g.abs().max()), rel=1e-6)


def test_one_step_per_backward_and_every_n():
    model = MLP()
    with GradientMonitor(model, every=2) as monitor:
        for _ in range(5):
            _step(model)
    assert monitor.step == 5
    assert [s for s, _ in monitor.history("0.weight")] == [0, 2, 4]
    assert monitor.report()["0.weight"]["step"] == 4


def test_alerts_name_the_parameter_step_and_kind():
    torch.manual_seed(0)
    model = MLP()
    with GradientMonitor(model, vanish=1e-6, explode=1e3) as monitor:
        _step(model)                                   # step 0: fine
        _step(model, scale=1e-12)                      # step 1: vanishing everywhere
        _step(model, scale=1e9)                        # step 2: exploding
        _step(model, x=torch.full((8, 16), float("nan")))   # step 3: NaN
        _step(model, scale=float("inf"))               # step 4: Inf (and NaN where 0 * inf)
    alerts = monitor.alerts
    assert not [a for a in alerts if a[0] == 0]
    kinds = {(s, k) for s, _, k in alerts if s in (1, 2, 3)}
    assert kinds == {(1, "vanishing"), (2, "exploding"), (3, "nan")}
    assert {n for s, n, _ in alerts if s == 1} == {n for n, _ in model.named_parameters()}
    assert (4, "4.bias", "inf") in alerts  # the last bias: inf without NaN
    assert all(kind in ("vanishing", "exploding", "nan", "inf") for _, _, kind in alerts)
    assert "nan" in monitor.table() or "inf" in monitor.table()


# When statistics are copied to the host is not visible through the public API: these two tests
# watch GradientMonitor's pending queue and its flush directly.
def test_statistics_stay_on_the_device_until_read(monkeypatch):
    model = MLP()
    copies = []
    real_flush = GradientMonitor._flush  # noqa: SLF001
    monkeypatch.setattr(GradientMonitor, "_flush", lambda self: (copies.append(len(self._pending)),
                                                                 real_flush(self)))
    monitor = GradientMonitor(model)
    for _ in range(10):
        _step(model)
    pending = monitor._pending  # noqa: SLF001
    assert copies == [] and len(pending) == 10
    assert all(isinstance(stats, torch.Tensor) for _, _, stats in pending)
    monitor.report()
    assert copies == [10] and monitor._pending == []  # noqa: SLF001
    monitor.remove()


def test_history_is_bounded_and_pending_is_flushed_in_batches(monkeypatch):
    monkeypatch.setattr(gradients_module, "FLUSH_EVERY", 4)
    model = MLP()
    with GradientMonitor(model, history=3) as monitor:
        for _ in range(10):
            _step(model)
            assert len(monitor._pending) < 4  # noqa: SLF001
    assert [s for s, _ in monitor.history("2.weight")] == [7, 8, 9]
    with pytest.raises(ConfigError, match="did you mean 'norm'"):
        monitor.history("2.weight", "nrm")
    with pytest.raises(ConfigError, match="unknown parameter name"):
        monitor.history("9.weight")


def test_a_backward_that_raises_still_counts_as_a_step():
    model = MLP()

    def explode(grad):
        raise RuntimeError("bad grad")

    with GradientMonitor(model) as monitor:
        handle = model[0].weight.register_hook(explode)
        with pytest.raises(RuntimeError, match="bad grad"):
            _step(model)
        handle.remove()
        _step(model)
        _step(model)
    assert monitor.step == 3


def test_hooks_are_removed_exactly_and_frozen_parameters_skipped():
    model = SmallResNet()
    model.fc.requires_grad_(False)
    before = hook_state(model)
    with GradientMonitor(model) as monitor:
        model(torch.randn(2, 3, 8, 8)).sum().backward()
    assert hook_state(model) == before
    assert "fc.weight" not in monitor.report() and "conv1.weight" in monitor.report()
    with pytest.raises(ConfigError, match="no parameter that requires grad"):
        GradientMonitor(nn.ReLU())
    with pytest.raises(ConfigError, match="every"):
        GradientMonitor(model, every=0)
    with pytest.raises(ConfigError, match="vanish < explode"):
        GradientMonitor(model, vanish=1.0, explode=0.5)


def test_clip_gradients_by_value_and_by_norm_through_tensor_hooks():
    torch.manual_seed(0)
    model = MLP()
    before = hook_state(model)
    with clip_gradients(model, max_value=1e-3) as handles:
        assert len(handles) == 6
        _step(model, scale=100.0)
    assert max(float(p.grad.abs().max()) for p in model.parameters()) == pytest.approx(1e-3)
    with clip_gradients(model.parameters(), max_norm=0.5):
        _step(model, scale=100.0)
    assert all(float(p.grad.norm()) <= 0.5 + 1e-5 for p in model.parameters())
    assert hook_state(model) == before
    _step(model, scale=100.0)
    assert max(float(p.grad.norm()) for p in model.parameters()) > 1.0
    with pytest.raises(ConfigError, match="max_norm, max_value"):
        clip_gradients(model)
    with pytest.raises(ConfigError, match="positive"):
        clip_gradients(model, max_norm=-1)


def test_edit_gradients_with_and_without_names():
    model = MLP()
    before = hook_state(model)
    seen = []
    def zero_biases(name, grad):
        seen.append(name)
        return grad * 0 if name.endswith("bias") else None

    with edit_gradients(model, zero_biases, names=True):
        _step(model)
    assert sorted(seen) == sorted(n for n, _ in model.named_parameters())
    assert all(float(p.grad.abs().sum()) == 0 for n, p in model.named_parameters() if n.endswith("bias"))
    assert all(float(p.grad.abs().sum()) > 0 for n, p in model.named_parameters() if n.endswith("weight"))
    with edit_gradients([model[0].weight], lambda g: g * 2):
        _step(model)
    assert hook_state(model) == before


def test_sparse_gradients_are_summarised_like_dense_ones():
    emb = nn.Embedding(10, 3, sparse=True)
    with GradientMonitor(emb) as monitor:
        emb(torch.tensor([1, 1, 4])).pow(2).sum().backward()
    dense = emb.weight.grad.to_dense()
    stats = monitor.report()["weight"]
    assert stats["norm"] == pytest.approx(float(dense.norm()), rel=1e-5)
    assert stats["mean"] == pytest.approx(float(dense.mean()), rel=1e-5, abs=1e-7)
    assert stats["std"] == pytest.approx(float(dense.std(correction=0)), rel=1e-4)
    assert stats["max"] == pytest.approx(float(dense.abs().max()), rel=1e-6)
