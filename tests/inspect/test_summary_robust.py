"""summary() where torchinfo's own test cases go: no input, lazy and scripted modules, packed
sequences, scalar inputs, and the input sizes it must refuse."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from hookline.core import ConfigError
from hookline.inspect import summary

from .models import MLP, SmallResNet, hook_state


# -- parameters only ---------------------------------------------------------------------------
class NoForwardCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = MLP((4, 8, 2))
        self.extra = nn.Parameter(torch.zeros(3))

    def forward(self, x):
        raise AssertionError("summary(model) must not run forward")


def test_without_input_the_rows_are_the_module_tree_with_parameters_only():
    model = NoForwardCalls()
    before = hook_state(model)
    s = summary(model)
    assert not s.forward and s.total_flops == 0 and s.total_params == 4 * 8 + 8 + 8 * 2 + 2 + 3
    assert [(r.name, r.depth, r.params) for r in s.layers] == [
        ("", 0, 61), ("body", 1, 58), ("body.0", 2, 40), ("body.1", 2, 0), ("body.2", 2, 18)]
    assert all(r.output_shape is None for r in s.layers)
    table = str(s)
    assert "Output Shape" not in table and "FLOPs" not in table.split("\n")[1]
    assert "Parameters only: no forward pass" in table and "Total params: 61" in table
    assert hook_state(model) == before


def test_parameter_totals_agree_with_a_forward_run_and_depth_applies():
    model = SmallResNet()
    ran, tree = summary(model, input_size=(1, 3, 16, 16)), summary(model, depth=1)
    assert tree.total_params == ran.total_params and tree.trainable_params == ran.trainable_params
    assert {r.name for r in tree.layers} == {"", "conv1", "bn1", "relu", "layer1", "layer2", "layer3",
                                             "avgpool", "fc"}


def test_containers_without_forward_are_listed_and_refuse_inputs():
    blocks = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
    s = summary(blocks)
    assert s.total_params == 12 and [r.name for r in s.layers] == ["", "0", "1"]
    assert summary(nn.ModuleList()).total_params == 0
    with pytest.raises(ConfigError, match=r"ModuleList has no forward\(\): call summary\(model\) without"):
        summary(blocks, input_size=(1, 2))


# -- lazy modules -----------------------------------------------------------------------------
def test_lazy_modules_are_counted_after_the_forward_pass_materialises_them():
    lazy = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2))
    before = summary(lazy)
    assert before.total_params == 0 and before.uninitialized == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert "Uninitialized (lazy) params, not counted: 0.weight" in str(before)
    after = summary(lazy, input_size=(3, 5))
    assert after.uninitialized == [] and after.total_params == 5 * 8 + 8 + 8 * 2 + 2
    assert [r.params for r in after.layers] == [66, 48, 0, 18] and after.total_flops == 2 * 3 * (40 + 16)


def test_a_module_that_initialises_a_parameter_in_forward():
    """torchinfo's UninitializedParameterModel."""
    class Late(nn.Module):
        def __init__(self):
            super().__init__()
            self.param = nn.UninitializedParameter()

        def forward(self, x):
            self.param = nn.Parameter(torch.zeros(128))
            return x

    assert summary(Late()).uninitialized == ["param"]
    assert summary(Late(), input_data=torch.randn(2, 2)).total_params == 128


# -- TorchScript ----------------------------------------------------------------------------------
def test_scripted_models_list_their_tree_with_the_model_output_and_flops():
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    scripted = torch.jit.script(eager)
    x = torch.randn(64, 128)
    a, b = summary(eager, input_data=x), summary(scripted, input_data=x)
    rows = [[(r.name, r.type_name, r.params) for r in s.layers] for s in (a, b)]
    assert rows[0] == rows[1]
    assert b.model_name == "Sequential" and b.layers[0].output_shape == [64, 10]
    assert b.total_flops == a.total_flops == 2 * 64 * (128 * 64 + 64 * 10)


def test_a_scripted_submodule_inside_an_eager_model():
    class Partly(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.jit.script(nn.Conv2d(1, 4, 3))
            self.fc = nn.Linear(4 * 26 * 26, 2)

        def forward(self, x):
            return self.fc(self.conv(x).flatten(1))

    s = summary(Partly(), input_size=(2, 1, 28, 28))
    assert [r.name for r in s.layers] == ["", "fc"]                     # no hooks inside TorchScript
    assert s.total_params == 40 + 4 * 26 * 26 * 2 + 2
    assert s.layers[0].flops == s.total_flops > s.layers[1].flops       # the conv's FLOPs are in the total


# -- packed sequences and scalar inputs -----------------------------------------------------------
def test_a_packed_sequence_as_input_data_and_packed_inside_forward():
    lstm = nn.LSTM(4, 8)
    packed = pack_padded_sequence(torch.randn(5, 3, 4), torch.tensor([5, 3, 2]))
    s = summary(lstm, input_data=packed)
    assert s.layers[0].output_shape == [[10, 8], [1, 3, 8], [1, 3, 8]]  # PackedSequence data, h, c
    assert s.total_macs == 10 * 4 * 8 * (4 + 8)

    class PackPaddedLSTM(nn.Module):   # torchinfo's case: pack_padded_sequence inside forward
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(60, 16)
            self.lstm = nn.LSTM(16, 8)
            self.out = nn.Linear(8, 3)

        def forward(self, batch, lengths):
            _, (h, _) = self.lstm(pack_padded_sequence(self.embedding(batch), lengths))
            return self.out(h[-1])

    lengths = torch.tensor([6, 4, 4, 1])
    s = summary(PackPaddedLSTM(), input_data=torch.ones(6, 4, dtype=torch.long), lengths=lengths)
    lstm_row = next(r for r in s.layers if r.name == "lstm")
    assert lstm_row.macs == int(lengths.sum()) * 4 * 8 * (16 + 8)


def test_scalar_inputs_and_legacy_dtypes():
    class Timestep(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(10, 5)

        def forward(self, x, t):
            return self.linear(x) * t

    s = summary(Timestep(), input_size=[[1, 10], []], dtypes=[torch.float32, torch.float32])
    assert s.total_params == 55 and s.layers[0].output_shape == [1, 5]
    s = summary(nn.Embedding(10, 3), input_size=(2, 4), dtypes=[torch.LongTensor])
    assert s.layers[0].output_shape == [2, 4, 3]


@pytest.mark.parametrize("bad, message", [
    ((2, 0), "dimension of size 0"),
    ([(3, 0)], "dimension of size 0"),
    ((2, -1), "negative dimension"),
    ([], "input_size must be a shape"),
    ((), "input_size must be a shape"),
    ({0: 1}, "input_size must be a shape"),
    ("hello", "input_size must be a shape"),
    ([(2, 3), "x"], "input_size must be a shape"),
])
def test_input_sizes_that_are_refused_name_input_size(bad, message):
    with pytest.raises(ConfigError, match=message):
        summary(nn.Linear(3, 3), input_size=bad)


def test_bad_dtypes_are_config_errors_and_dtype_names_are_accepted():
    with pytest.raises(ConfigError, match="dtypes must be torch dtypes"):
        summary(nn.Linear(3, 3), input_size=(1, 3), dtypes=[3])
    with pytest.raises(ConfigError, match="unknown dtype 'flaot'; accepted names: float, float32"):
        summary(nn.Linear(3, 3), input_size=(1, 3), dtypes=["flaot"])
    assert summary(nn.Linear(3, 3), input_size=(1, 3), dtypes=["float"]).total_params == 12
