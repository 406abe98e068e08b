"""ActivationStats: exact statistics, in-place activations, saturation, calls."""

import pytest
import torch
from torch import nn

from hookline.core import ConfigError
from hookline.inspect import ActivationStats

from .models import SmallResNet, hook_state


def _reference(outputs):
    y = torch.cat([o.detach().reshape(-1) for o in outputs]).double()
    return {"mean": float(y.mean()), "std": float(y.std(correction=0)), "min": float(y.min()),
            "max": float(y.max()), "dead": float((y == 0).double().mean())}


def test_statistics_match_the_outputs_over_several_calls():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 20), nn.ReLU(), nn.Linear(20, 3), nn.Tanh())
    xs = [torch.randn(5, 6), torch.randn(7, 6)]
    with ActivationStats(net) as stats:
        for x in xs:
            net(x)
    report = stats.report()
    assert list(report) == ["1", "3"]
    relu_outputs = [torch.relu(net[0](x)) for x in xs]
    expected = _reference(relu_outputs)
    assert report["1"]["calls"] == 2
    for key, value in expected.items():
        assert report["1"][key] == pytest.approx(value, rel=1e-5, abs=1e-7), key
    assert report["1"]["saturated"] is None and report["3"]["saturated"] is not None
    assert stats.sample("1").numel() == sum(o.numel() for o in relu_outputs[-1:])


def test_in_place_relu_gives_the_same_statistics_and_backward_still_works():
    torch.manual_seed(0)
    model = SmallResNet().train()
    twin = SmallResNet().train()
    twin.load_state_dict(model.state_dict())
    for module in twin.modules():
        if isinstance(module, nn.ReLU):
            module.inplace = False
    x = torch.randn(4, 3, 8, 8)
    before = hook_state(model)
    with ActivationStats(model) as inplace_stats, ActivationStats(twin) as plain_stats:
        model(x).sum().backward()   # no full backward hook: in-place ReLUs keep working
        twin(x).sum().backward()
    assert hook_state(model) == before
    a, b = inplace_stats.report(), plain_stats.report()
    assert list(a) == list(b) and len(a) == 7  # the stem's ReLU and one per block, called twice
    assert a["relu"]["calls"] == 1 and a["layer2.1.relu"]["calls"] == 2
    for name in a:
        for key in ("calls", "mean", "std", "min", "max", "dead"):
            assert a[name][key] == pytest.approx(b[name][key], rel=1e-5, abs=1e-7), (name, key)
    assert 0 < a["relu"]["dead"] < 1


def test_dead_ratio_counts_exact_zeros():
    net = nn.Sequential(nn.ReLU())
    with ActivationStats(net) as stats:
        net(torch.tensor([-1.0, 0.0, 2.0, 3.0]))
    assert stats.report()["0"]["dead"] == 0.5


def test_saturation_of_bounded_activations():
    net = nn.Sequential(nn.Sigmoid(), nn.Identity())
    net2 = nn.Sequential(nn.Hardtanh(-2.0, 2.0))
    x = torch.tensor([-10.0, -0.1, 0.0, 0.1, 10.0])
    with ActivationStats(net, saturation=0.01) as stats, ActivationStats(net2) as stats2:
        net(x)
        net2(torch.tensor([-3.0, -1.99, 0.0, 1.0]))
    assert stats.report()["0"]["saturated"] == pytest.approx(2 / 5)
    assert stats2.report()["0"]["saturated"] == pytest.approx(2 / 4)


def test_custom_types_reset_table_and_errors():
    net = nn.Sequential(nn.Linear(3, 3), nn.GELU())
    with ActivationStats(net, types=[nn.Linear]) as stats:
        net(torch.randn(2, 3))
    assert list(stats.report()) == ["0"]
    assert "layer" in stats.table() and "dead" in stats.table()
    stats.reset()
    assert stats.report() == {}
    with pytest.raises(ConfigError, match="no module of types ReLU.*present: Linear, Sequential"):
        ActivationStats(nn.Sequential(nn.Linear(2, 2)), types=[nn.ReLU])
    with pytest.raises(ConfigError, match="unknown activation layer"):
        ActivationStats(net).sample("7")


def test_dead_and_saturated_alerts_name_the_step_and_the_layer():
    relu, sig = nn.ReLU(), nn.Sigmoid()
    model = nn.Sequential(nn.Linear(4, 4), relu, nn.Linear(4, 4), sig)
    with torch.no_grad():
        model[0].bias.fill_(0)
        model[2].weight.fill_(0)
    with ActivationStats(model, dead_threshold=0.6, saturation_threshold=0.5) as stats:
        model(torch.randn(8, 4))                               # step 0: about half dead; sigmoid(0 + b)
        with torch.no_grad():
            model[0].bias.fill_(-100)                          # step 1: every ReLU output is 0
            model[2].bias.fill_(100)                           # ... and the Sigmoid sits at 1
        model(torch.randn(8, 4))
    alerts = stats.alerts
    assert (1, "1", "dead") in alerts and (1, "3", "saturated") in alerts
    assert not [a for a in alerts if a[0] == 0 and a[2] == "saturated"]
    assert stats.step == 2 and "dead" in stats.table()
    stats.reset()
    assert stats.alerts == [] and stats.step == 2


def test_alerts_are_checked_in_batches_not_per_call(monkeypatch):
    """Until alerts are read (or FLUSH_EVERY steps pass), the per-call counts stay where they are."""
    from hookline.inspect import activations  # noqa: PLC0415

    monkeypatch.setattr(activations, "FLUSH_EVERY", 3)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    with ActivationStats(model, dead_threshold=0.0) as stats:
        for _ in range(3):
            model(torch.randn(2, 4))
        assert len(stats._pending) == 3 and not stats._alerts  # noqa: SLF001 - nothing read yet
        model(torch.randn(2, 4))                                 # the 4th step flushes the first 3
        assert len(stats._pending) == 1 and len(stats._alerts) > 0  # noqa: SLF001
    assert [step for step, *_ in stats.alerts] == [0, 1, 2, 3]


def test_no_thresholds_no_alerts_and_bad_thresholds_are_config_errors():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    with ActivationStats(model) as stats:
        model(torch.randn(2, 4))
    assert stats.alerts == [] and stats._pending == []  # noqa: SLF001
    for bad in (1.5, -0.1, "high", True):
        with pytest.raises(ConfigError, match="dead_threshold must be a fraction"):
            ActivationStats(model, dead_threshold=bad)


class _Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 8, batch_first=True)
        self.lstm = nn.LSTM(8, 6, num_layers=2, batch_first=True)

    def forward(self, x):
        return self.lstm(self.gru(x)[0])[0]


def test_gru_and_lstm_record_their_output_sequence():
    torch.manual_seed(0)
    model = _Recurrent()
    x = torch.randn(3, 5, 4)
    with ActivationStats(model, types=[nn.GRU, nn.LSTM]) as stats:
        model(x)
    gru_out, _h = model.gru(x)
    lstm_out, (h_n, _c) = model.lstm(gru_out)
    report = stats.report()
    for name, out in (("gru", gru_out), ("lstm", lstm_out)):
        assert report[name]["calls"] == 1
        assert report[name]["mean"] == pytest.approx(out.mean().item(), abs=1e-6)
        assert report[name]["max"] == pytest.approx(out.max().item())
        assert stats.sample(name).numel() == out.numel()
    assert h_n.shape[0] == 2 and stats.sample("lstm").numel() != h_n.numel()  # the sequence, not h_n


def test_packed_sequences_record_their_data_and_outputs_without_tensors_warn_once():
    gru = nn.GRU(3, 4)
    packed = nn.utils.rnn.pack_padded_sequence(torch.randn(5, 2, 3), [5, 2])
    with ActivationStats(gru, types=nn.GRU) as stats:
        out, _ = gru(packed)
    assert stats.sample("").numel() == out.data.numel() == 7 * 4

    class Counter(nn.Module):
        def forward(self, x):
            return {"count": int(x.numel())}

    model = nn.Sequential(Counter())
    with ActivationStats(model, types=Counter) as stats, pytest.warns(UserWarning) as caught:
        model(torch.ones(2))
        model(torch.ones(2))
    assert len([w for w in caught if "ActivationStats: 0 (Counter) returned a dict" in str(w.message)]) == 1
    assert stats.report() == {}


def test_nested_tensor_outputs_of_the_transformer_fast_path_are_counted():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()
    x = torch.randn(3, 6, 16)
    mask = torch.zeros(3, 6, dtype=torch.bool)
    mask[0, 4:] = True
    mask[1, 2:] = True
    with torch.no_grad():
        expected = encoder(x, src_key_padding_mask=mask)
        with ActivationStats(encoder, types=[nn.TransformerEncoderLayer]) as stats:
            got = encoder(x, src_key_padding_mask=mask)
    assert torch.allclose(got, expected)  # the user's forward is unchanged
    report = stats.report()
    assert sorted(report) == ["layers.0", "layers.1"]
    assert all(r["calls"] == 1 for r in report.values())
    # the last layer's output is nested: its elements are the unpadded positions only
    real = expected[~mask]
    assert report["layers.1"]["max"] == pytest.approx(float(real.max()), abs=1e-5)
    assert report["layers.1"]["mean"] == pytest.approx(float(real.mean()), abs=1e-5)
