"""summary() with torchinfo's options: columns, rows, verbose, batch_dim, dtypes, device; refused ones."""

import pytest
import torch
import torchinfo
from torch import nn

from hookline.core import ConfigError
from hookline.demo.model import DigitsCNN
from hookline.inspect import summary

from .models import SharedNet, TinyTransformer

ALL_TORCHINFO_COLUMNS = ["input_size", "output_size", "num_params", "params_percent", "kernel_size",
                         "mult_adds", "trainable"]


def test_the_first_call_in_a_fresh_process_does_not_import_dynamo():
    """The first summary() used to import torch._dynamo (FlopCounterMode's dispatch wrapper): 1.5 s."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = ("import sys, torch\nfrom hookline.inspect import summary\nfrom torch import nn\n"
            "s = summary(nn.Sequential(nn.Conv2d(1, 4, 3), nn.Flatten(), nn.Linear(144, 2)), "
            "input_size=(1, 1, 8, 8))\nprint(s.total_flops, 'torch._dynamo' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=True)
    assert done.stdout.split() == [str(2 * (36 * 4 * 9) + 2 * 144 * 2), "False"]


def test_torchinfo_columns_show_what_torchinfo_shows():
    torch.manual_seed(0)
    model = DigitsCNN()
    got = summary(model, input_size=(2, 1, 8, 8), col_names=ALL_TORCHINFO_COLUMNS, row_settings=["depth"])
    theirs = torchinfo.summary(model, input_size=(2, 1, 8, 8), col_names=ALL_TORCHINFO_COLUMNS, verbose=0)
    text = str(got)
    assert text.splitlines()[1].split() == ["Layer", "(type:depth-idx)", "Input", "Shape", "Output", "Shape",
                                            "Param", "#", "Param", "%", "Kernel", "Shape", "Mult-Adds",
                                            "Trainable"]
    conv = next(line for line in text.splitlines() if "Conv2d: 2-3" in line)
    assert conv.split()[3:] == ["[2,", "16,", "8,", "8]", "[2,", "32,", "8,", "8]", "4,640", "12.12%", "[3,",
                                "3]", f"{2 * 32 * 64 * 16 * 9:,}", "True"]
    pool = next(line for line in text.splitlines() if "MaxPool2d: 2-5" in line)
    assert pool.split()[-3] == "2"  # its int kernel_size, as torchinfo shows it
    ours = {line.split(":")[1].split()[0] for line in text.splitlines() if ": 2-" in line}
    assert ours == {f"2-{i}" for i in range(1, 10)}
    assert "Conv2d: 2-3" in str(theirs) and "12.12%" in str(theirs)


def test_trainable_column_and_verbose_2_parameter_rows(capsys):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    model[2].weight.requires_grad_(False)
    s = summary(model, input_size=(1, 4), col_names=["num_params", "trainable"], verbose=2)
    printed = capsys.readouterr().out
    assert printed.strip() == str(s).strip()
    rows = {line.split()[0].lstrip("├└─"): line.split()[1:] for line in printed.splitlines()[3:9]}
    assert rows["0"] == ["(Linear)", "15", "True"] and rows["1"] == ["(ReLU)", "--", "--"]
    assert rows["2"] == ["(Linear)", "8", "Partial"] and printed.splitlines()[1].split()[-1] == "Trainable"
    assert "└─weight [2, 3]" in printed and "└─bias [3]" in printed
    assert summary(model, input_size=(1, 4), verbose=0) is not None and capsys.readouterr().out == ""
    assert summary(model, input_size=(1, 4)) is not None and capsys.readouterr().out == ""  # hookline default


def test_row_settings_ascii_and_hidden_recursive_layers():
    model = SharedNet()
    full = summary(model, input_size=(2, 4), row_settings=["var_names", "ascii_only"])
    hidden = summary(model, input_size=(2, 4), row_settings=["var_names", "hide_recursive_layers"])
    assert "(reused)" in str(full) and "(reused)" not in str(hidden)
    assert "|-" in str(full) and "├─" not in str(full) and "├─" in str(hidden)
    assert full.total_params == hidden.total_params


def test_batch_dim_dtypes_names_and_forward_kwargs():
    s = summary(DigitsCNN(), input_size=(1, 8, 8), batch_dim=0)
    assert s.layers[0].output_shape == [1, 10] and s.layers[0].input_shape == [1, 1, 8, 8]
    tokens = summary(TinyTransformer(), input_size=(2, 5), dtypes=["long"])
    assert tokens.layers[1].input_shape == [2, 5] and tokens.layers[1].type_name == "Embedding"

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x, scale=1.0):
            return self.fc(x) * scale

    assert summary(Scaled(), input_size=(1, 3), scale=2.0).total_params == 12


@pytest.mark.parametrize("options, message", [
    ({"col_width": 20}, "does not take torchinfo's col_width"),
    ({"cache_forward_pass": True}, "does not take torchinfo's cache_forward_pass"),
    ({"col_names": ["output_size", "groups"]},
     r"unknown col_names entry 'groups'.*accepted: flops, input_size"),
    ({"col_names": "output_size"}, "col_names must be a list of column names"),
    ({"row_settings": ["depht"]}, "unknown row_settings entry 'depht'; did you mean 'depth'"),
    ({"verbose": 3}, "verbose must be 0 .quiet., 1"),
    ({"batch_dim": 5}, "batch_dim 5 is out of range"),
    ({"scal": 2}, "got 'scal', which is neither one of its options nor an argument of Linear.forward"),
    ({"device": "meta"}, "summary does not move the model"),
])
def test_refused_and_bad_options_are_config_errors_before_the_forward_pass(options, message):
    model = nn.Linear(3, 3)
    calls = []
    model.register_forward_hook(lambda *_: calls.append(1))
    with pytest.raises(ConfigError, match=message):
        summary(model, input_size=(1, 3), **options)
    assert calls == []


def test_columns_that_need_a_forward_pass_without_input():
    with pytest.raises(ConfigError, match="'output_size' needs a forward pass"):
        summary(DigitsCNN(), col_names=["output_size"])
    with pytest.raises(ConfigError, match="batch_dim works with input_size only"):
        summary(DigitsCNN(), input_data=torch.rand(1, 1, 8, 8), batch_dim=0)
    s = summary(DigitsCNN(), col_names=["num_params", "kernel_size", "trainable"])
    assert "[3, 3]" in str(s) and "Kernel Shape" in str(s)


def test_torch_cond_is_counted_for_the_branch_taken():
    class Branchy(nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda t: t @ t, lambda t: t + 1, (x,))

    assert summary(Branchy(), input_data=torch.ones(4, 4)).total_flops == 2 * 4 * 4 * 4
    assert summary(Branchy(), input_data=-torch.ones(4, 4)).total_flops == 0


class _CatchInside(nn.Module):
    """forward catches an error its first submodule raises, then takes another path."""

    def __init__(self) -> None:
        super().__init__()
        self.fast = nn.Linear(3, 4)  # expects 3 features; the input has 4: it raises
        self.slow = nn.Sequential(nn.Linear(4, 4))
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        try:
            y = self.fast(x)
        except RuntimeError:
            y = self.slow(x)
        return self.head(y)


def test_a_submodule_error_forward_catches_leaves_the_tree_as_torchinfo_shows_it():
    torch.manual_seed(0)
    model = _CatchInside()
    got = summary(model, input_size=(2, 4), depth=1)
    theirs = torchinfo.summary(model, input_size=(2, 4), depth=1, verbose=0)
    assert [(r.depth, r.name) for r in got.layers] == [(0, ""), (1, "fast"), (1, "slow"), (1, "head")]
    assert [(r.depth, r.var_name) for r in got.summary_list][1:4] == \
        [(layer.depth, layer.var_name) for layer in theirs.summary_list][1:4]
    assert not model.fast._forward_hooks  # noqa: SLF001  (the hooks are gone)


def test_parameters_of_layers_that_never_ran_count_on_their_parents_row_as_in_torchinfo():
    class Unused(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.used = nn.Linear(4, 4)
            self.spare = nn.Linear(4, 108)  # never called: 540 parameters

        def forward(self, x):
            return self.used(x)

    got = summary(Unused(), input_size=(2, 4), col_names=["num_params"])
    theirs = torchinfo.summary(Unused(), input_size=(2, 4), col_names=["num_params"], verbose=0)
    root = str(got).splitlines()[3].split()
    assert root == ["Unused", "540"] and str(theirs).splitlines()[3].split() == ["Unused", "540"]
    assert got.layers[0].own_params == 540 and got.total_params == 560


def test_frozen_layers_show_their_count_in_parentheses():
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    model[0].requires_grad_(False)
    rows = str(summary(model, input_size=(1, 4), col_names=["num_params"])).splitlines()
    assert rows[4].split()[-1] == "(20)" and rows[5].split()[-1] == "10"


def test_torchinfo_attribute_names_of_the_result_and_its_rows():
    torch.manual_seed(0)
    model = DigitsCNN()
    got = summary(model, input_size=(2, 1, 8, 8))
    theirs = torchinfo.summary(model, input_size=(2, 1, 8, 8), verbose=0)
    assert got.total_mult_adds == got.total_macs
    assert got.total_input == got.input_bytes == 2 * 64 * 4  # torchinfo adds Python's object overhead
    assert got.total_param_bytes == theirs.total_param_bytes
    assert got.total_output_bytes == 2 * got.activation_bytes
    assert len(got.summary_list) == len(theirs.summary_list)
    for ours, their in zip(got.summary_list, theirs.summary_list):
        assert (ours.class_name, ours.var_name, ours.depth, ours.num_params, ours.trainable_params,
                ours.output_size, ours.input_size, ours.is_recursive, ours.trainable) == (
            their.class_name, their.var_name, their.depth, their.num_params, their.trainable_params,
            their.output_size, their.input_size, their.is_recursive, their.trainable)


def test_torchinfos_input_forms_numpy_dims_nested_lists_and_mode_none():
    import numpy as np  # noqa: PLC0415

    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(4 * 30 * 30, 2))
    for size in [(1, np.int64(3), np.int64(32), 32), [[(1, 3, 32, 32)]]]:
        assert summary(model, input_size=size).layers[-1].output_shape == [1, 2]
    model.train()
    assert summary(model, input_size=(1, 3, 32, 32), mode=None).total_params == 4 * 27 + 4 + 7202
    assert model.training
    with pytest.raises(ConfigError, match="give input_size or input_data, not both"):
        summary(model, input_size=(1, 3, 32, 32), input_data=torch.zeros(1, 3, 32, 32))
