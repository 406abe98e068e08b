"""FeatureExtractor: detached features, repeated calls, errors, exact removal."""

import gc
import warnings
import weakref

import pytest
import torch
from torch import nn

from hookline.core import ConfigError
from hookline.inspect import FeatureExtractor

from .models import SharedNet, SmallResNet, hook_state


@pytest.fixture
def net():
    torch.manual_seed(0)
    return SmallResNet().eval()


def test_features_of_named_layers_match_the_layers_outputs(net):
    x = torch.randn(2, 3, 16, 16)
    before = hook_state(net)
    with FeatureExtractor(net, ["layer2", "layer3", "fc"]) as fx:
        out = net(x)
    assert list(fx.features) == ["layer2", "layer3", "fc"]
    assert fx.features["layer2"].shape == (2, 16, 8, 8)
    assert fx.features["layer3"].shape == (2, 32, 4, 4)
    assert torch.equal(fx.features["fc"], out)
    expected = net.layer2(net.layer1(net.relu(net.bn1(net.conv1(x)))))
    assert torch.allclose(fx.features["layer2"], expected)
    assert hook_state(net) == before


def _graph_alive_after_forward(net, **options) -> bool:
    """Whether an input saved by the autograd graph outlives the forward's output."""
    leaf = torch.randn(1, 3, 16, 16, requires_grad=True)
    x = leaf * 2  # non-leaf: only the graph (conv1 saves its input) keeps it alive
    ref = weakref.ref(x)
    with FeatureExtractor(net, ["layer2", "fc"], **options) as fx:
        out = net(x)
    del x, out
    gc.collect()
    alive = ref() is not None
    assert fx.features["layer2"].requires_grad is not options.get("detach", True)
    return alive


def test_features_are_detached_and_keep_no_graph_alive(net):
    assert not _graph_alive_after_forward(net), "a stored feature kept the autograd graph alive"
    assert _graph_alive_after_forward(net, detach=False)  # the control: asked to keep it


def test_detach_false_keeps_the_graph_for_backward_from_a_feature(net):
    x = torch.randn(1, 3, 16, 16, requires_grad=True)
    with FeatureExtractor(net, ["layer1"], detach=False) as fx:
        net(x)
    fx.features["layer1"].sum().backward()
    assert x.grad is not None


def test_a_module_called_several_times_gives_a_list_in_call_order():
    torch.manual_seed(0)
    net = SharedNet()
    x = torch.randn(3, 4)
    with FeatureExtractor(net, ["shared", "out"]) as fx:
        net(x)
    shared = fx.features["shared"]
    assert isinstance(shared, list) and len(shared) == 3 and fx.calls == {"shared": 3, "out": 1}
    h = torch.relu(net.inp(x))
    for recorded in shared:
        assert torch.allclose(recorded, net.shared(h))
        h = torch.relu(recorded)
    assert isinstance(fx.features["out"], torch.Tensor)


def test_call_returns_output_and_features_of_that_forward_only(net):
    before = hook_state(net)
    fx = FeatureExtractor(net, {"layer3": "deep", "avgpool": "pooled"})
    out, features = fx(torch.randn(4, 3, 16, 16))
    assert out.shape == (4, 10) and set(features) == {"deep", "pooled"}
    _, again = fx(torch.randn(1, 3, 16, 16))
    assert again["deep"].shape[0] == 1 and features["deep"].shape[0] == 4
    fx.remove()
    assert hook_state(net) == before
    with pytest.raises(RuntimeError, match="removed"):
        fx(torch.randn(1, 3, 16, 16))


def test_to_cpu_and_tuple_outputs():
    lstm = nn.LSTM(4, 6, batch_first=True)
    net = nn.Sequential()
    net.add_module("rnn", lstm)
    with FeatureExtractor(net, ["rnn"], to_cpu=True) as fx:
        net(torch.randn(2, 5, 4))
    output, (h, c) = fx.features["rnn"]
    assert output.shape == (2, 5, 6) and h.shape == (1, 2, 6) and output.device.type == "cpu"
    assert not output.requires_grad


def test_unknown_layer_suggests_the_closest_names_before_hooking_anything(net):
    before = hook_state(net)
    with pytest.raises(ConfigError, match=r"unknown layer name 'layer4'.*did you mean .*'layer1'"):
        FeatureExtractor(net, ["layer2", "layer4"])
    with pytest.raises(ConfigError, match=r"did you mean 'layer1\.0\.conv1'"):
        FeatureExtractor(net, ["layer1.0.cnv1"])
    assert hook_state(net) == before
    with pytest.raises(ConfigError, match="at least one"):
        FeatureExtractor(net, [])


def test_in_place_overwrite_is_reported_and_clone_keeps_the_true_output(net):
    # bn1's output is overwritten by the in-place ReLU that follows it
    x = torch.randn(1, 3, 16, 16)
    with FeatureExtractor(net, ["bn1"]) as fx, pytest.warns(RuntimeWarning, match="bn1.*clone=True"):
        net(x)
    assert fx.features["bn1"].min() >= 0  # clipped by the ReLU: not bn1's real output
    with FeatureExtractor(net, ["bn1"], clone=True) as fx, warnings.catch_warnings():
        warnings.simplefilter("error")
        net(x)
    assert torch.allclose(fx.features["bn1"], net.bn1(net.conv1(x)))
    assert fx.features["bn1"].min() < 0


def test_an_lstm_fed_a_packed_sequence_keeps_its_packed_output():
    from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence  # noqa: PLC0415

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 6)

        def forward(self, packed):
            return self.lstm(packed)[1][0]

    model = Tagger()
    packed = pack_padded_sequence(torch.randn(5, 3, 4), torch.tensor([5, 3, 2]))
    with FeatureExtractor(model, ["lstm"], clone=True) as fx:
        model(packed)
    output, (h, c) = fx.features["lstm"]
    assert isinstance(output, PackedSequence) and output.data.shape == (10, 6)
    assert torch.equal(output.batch_sizes, packed.batch_sizes) and h.shape == (1, 3, 6)
    assert output.data.grad_fn is None


class _Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = nn.ModuleDict({"p": nn.Linear(4, 2)})
        self.attn = nn.MultiheadAttention(4, 1, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.heads["p"](self.attn(x, x, x)[0])


def test_a_module_without_forward_is_refused_and_a_layer_that_never_ran_says_so():
    model = _Heads()
    before = hook_state(model)
    with pytest.raises(ConfigError, match=r"layer 'heads' is a ModuleDict, which has no forward.*heads\.p"):
        FeatureExtractor(model, ["heads", "heads.p"])
    assert hook_state(model) == before  # refused before any hook went on
    with FeatureExtractor(model, ["attn.out_proj", "heads.p"]) as fx:
        model(torch.randn(2, 3, 4))
    assert sorted(fx.features) == ["heads.p"]
    with pytest.raises(KeyError, match="did not run"):
        fx.features["attn.out_proj"]


@pytest.mark.parametrize("layers", [[""], {"": "out"}, [0], {0: "out"}])
def test_layer_names_are_checked_alike_in_a_list_and_a_dict(layers):
    with pytest.raises(ConfigError, match="layer names must be non-empty strings"):
        FeatureExtractor(_Heads(), layers)
