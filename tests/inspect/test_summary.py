"""summary(): parameter totals against torchinfo, FLOPs, rows, inputs, errors."""

import pytest
import torch
import torchinfo
from torch import nn

from hookline.core import ConfigError
from hookline.demo.model import DigitsCNN
from hookline.inspect import ModelSummary, summary

from .models import MLP, SharedNet, SmallResNet, TiedLM, TinyTransformer, TwoInputNet, hook_state

ORDINARY = {
    "mlp": (MLP, {"input_size": (2, 16)}),
    "resnet": (SmallResNet, {"input_size": (1, 3, 16, 16)}),
    "digits_cnn": (DigitsCNN, {"input_size": (1, 1, 8, 8)}),
    "transformer": (TinyTransformer, {"input_data": torch.randint(0, 100, (2, 7))}),
    "two_inputs": (TwoInputNet, {"input_data": [torch.rand(2, 1, 6, 6), torch.rand(2, 3)]}),
    "shared": (SharedNet, {"input_size": (2, 4)}),
}


@pytest.mark.parametrize("name", ORDINARY)
def test_parameter_totals_equal_torchinfo_on_ordinary_models(name):
    build, inputs = ORDINARY[name]
    torch.manual_seed(0)
    model = build()
    expected = torchinfo.summary(model, verbose=0, **inputs)
    got = summary(model, **inputs)
    assert (got.total_params, got.trainable_params) == (expected.total_params, expected.trainable_params)
    assert got.total_params == sum(p.numel() for p in model.parameters())


def test_tied_weights_are_counted_once_where_torchinfo_counts_them_twice():
    model = TiedLM(vocab=50, dim=16)
    tokens = torch.randint(0, 50, (2, 5))
    got = summary(model, input_data=tokens)
    once = 50 * 16 + (16 * 16 + 16)
    assert got.total_params == got.trainable_params == once
    assert torchinfo.summary(model, input_data=tokens, verbose=0).total_params == once + 50 * 16


def test_frozen_parameters_are_not_trainable():
    model = MLP()
    model[0].requires_grad_(False)
    got = summary(model, input_size=(1, 16))
    assert got.total_params - got.trainable_params == 16 * 32 + 32 == got.non_trainable_params


def test_linear_flops_are_two_times_in_out_batch():
    got = summary(nn.Linear(8, 16), input_size=(4, 8))
    assert got.total_flops == 2 * 8 * 16 * 4 == got.layers[0].flops
    assert got.total_macs == 8 * 16 * 4
    middle = summary(nn.Linear(8, 8), input_size=(1, 16, 8))  # torchinfo 1.8 says 72 MACs here
    assert middle.total_macs == 16 * 8 * 8


def test_conv_flops_and_per_row_flops_include_children():
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 5 * 5, 2))
    got = summary(model, input_size=(2, 3, 5, 5))
    conv = 2 * 2 * 4 * 5 * 5 * 3 * 3 * 3
    linear = 2 * 2 * 100 * 2
    assert [r.flops for r in got.layers] == [conv + linear, conv, 0, 0, linear]
    assert got.total_flops == conv + linear


def test_attention_and_matmuls_count_unlike_torchinfo():
    dim, heads, seq, batch, layers = 32, 4, 7, 2, 2
    model = TinyTransformer(dim=dim, heads=heads, layers=layers, classes=5)
    got = summary(model, input_data=torch.randint(0, 100, (batch, seq)))
    tokens = batch * seq
    per_layer = 2 * tokens * (3 * dim * dim + dim * dim + 2 * (dim * 2 * dim))  # projections and FFN
    per_layer += 2 * 2 * batch * seq * seq * dim  # scores and weighted sum
    assert got.total_flops == layers * per_layer + 2 * batch * dim * 5
    legacy = torchinfo.summary(model, input_data=torch.randint(0, 100, (batch, seq)), verbose=0)
    assert got.total_macs > 5 * legacy.total_mult_adds


def test_rows_follow_the_call_tree_with_depth_and_reuse():
    got = summary(SharedNet(), input_size=(2, 4), depth=1)
    rows = [(r.name, r.depth, r.reused) for r in got.layers]
    assert rows[0] == ("", 0, False)
    assert [n for n, _, _ in rows].count("shared") == 3
    assert [reused for n, _, reused in rows if n == "shared"] == [False, True, True]
    text = str(got)
    assert "(reused)" in text and "shared (Linear)" in text and "Total params: 130" in text


def test_module_list_children_sit_under_a_container_row():
    got = summary(TinyTransformer(), input_data=torch.randint(0, 100, (1, 4)), depth=2)
    names = [(r.name, r.depth, r.container) for r in got.layers]
    assert ("encoder.layers", 2, True) in names
    assert [n for n, d, _ in names if d == 2] == ["encoder.layers"]
    deeper = summary(TinyTransformer(), input_data=torch.randint(0, 100, (1, 4)), depth=3)
    container = next(r for r in deeper.layers if r.name == "encoder.layers")
    children = [r.name for r in deeper.layers if r.parent is container]
    assert children == ["encoder.layers.0", "encoder.layers.1"]
    assert container.flops == sum(r.flops for r in deeper.layers if r.parent is container) > 0


def test_depth_limits_rows_and_the_table_shows_totals():
    model = SmallResNet()
    shallow = summary(model, input_size=(1, 3, 16, 16), depth=1)
    deep = summary(model, input_size=(1, 3, 16, 16), depth=3)
    assert max(r.depth for r in shallow.layers) == 1 and max(r.depth for r in deep.layers) == 3
    assert len(deep.layers) > len(shallow.layers)
    assert isinstance(deep, ModelSummary)
    layer1 = next(r for r in shallow.layers if r.name == "layer1")
    assert layer1.output_shape == [1, 8, 16, 16] and layer1.params == 2 * 2 * (8 * 8 * 9 + 16)
    text = deep.table()
    for needle in ("Layer (name (type))", "Output Shape", "Param #", "Trainable #", "FLOPs",
                   "└─conv1 (Conv2d)", "Total params: 44,370", "Params size (MB): 0.18",
                   "Forward activations, estimate (MB)"):
        assert needle in text, needle
    assert deep.param_bytes == 44370 * 4 and deep.input_bytes == 3 * 16 * 16 * 4
    assert "|-" in deep.table(ascii_only=True)


def test_activation_estimate_skips_views_and_in_place_results():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Flatten(), nn.Linear(8, 2))
    got = summary(model, input_size=(3, 4))
    assert got.activation_bytes == 3 * (8 + 2) * 4


def test_several_positional_and_keyword_inputs():
    model = TwoInputNet()
    by_size = summary(model, input_size=[(2, 1, 6, 6), (2, 3)])
    assert by_size.layers[0].output_shape == [2, 2]
    inputs = {"image": torch.rand(3, 1, 6, 6), "extra": torch.rand(3, 3)}
    by_dict = summary(model, input_data=inputs, scale=2.0)
    assert by_dict.layers[0].output_shape == [3, 2] and by_dict.total_params == 74
    shapes = {r.name: r.output_shape for r in by_dict.layers}
    assert shapes["side"] == [3, 4] and shapes["conv"] == [3, 4, 6, 6]


def test_integer_inputs_modes_and_hooks_are_restored():
    model = TinyTransformer()
    model.train()
    model.head.eval()
    before = hook_state(model)
    summary(model, input_size=(2, 5), dtypes=[torch.long])
    assert model.training and not model.head.training and model.encoder.training
    assert hook_state(model) == before
    summary(model, input_size=(2, 5), dtypes=torch.long, mode="same", count_flops=False)
    assert hook_state(model) == before


def test_bad_arguments_are_config_errors_and_a_failing_forward_names_the_model():
    model = MLP()
    before = hook_state(model)
    with pytest.raises(ConfigError, match="input_size must be a shape"):
        summary(model, input_size=(2, "a"))
    with pytest.raises(ConfigError, match="did you mean 'eval'"):
        summary(model, input_size=(1, 16), mode="evl")
    with pytest.raises(ConfigError, match="depth"):
        summary(model, input_size=(1, 16), depth=-1)
    with pytest.raises(RuntimeError, match=r"forward pass of MLP failed .*'0'"):
        summary(model, input_size=(1, 15))
    assert hook_state(model) == before
