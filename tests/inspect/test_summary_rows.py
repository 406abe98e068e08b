"""summary()'s parameter columns add up: containers in several stretches, tied weights, leaf calls."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hookline.core import ConfigError
from hookline.inspect import summary


class Zipped(nn.Module):
    """Two ModuleLists whose children run interleaved: each container has a row per stretch."""

    def __init__(self, n: int = 3) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])
        self.norms = nn.ModuleList([nn.LayerNorm(4) for _ in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer, norm in zip(self.layers, self.norms):
            x = norm(layer(x))
        return x


class SharedActivation(nn.Module):
    """A shared ReLU called between a ModuleList's layers."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = self.act(layer(x))
        return x


class Tied(nn.Module):
    """An embedding and an output layer sharing one matrix; the output layer has a bias of its own."""

    def __init__(self, bias: bool = False) -> None:
        super().__init__()
        self.emb = nn.Embedding(30, 8)
        self.out = nn.Linear(8, 30, bias=bias)
        self.out.weight = self.emb.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.emb(x))


class WithAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.attn(q, k, v, need_weights=False)[0]


def _cells(table: str, rows: int, column: int = -1) -> list[str]:
    """The ``column``-th cell from the right of each of the first ``rows`` rows of a table."""
    lines = table.splitlines()[3:3 + rows]
    return [line.split()[column] for line in lines]


def _number(cell: str) -> float:
    text = cell.rstrip("%").replace(",", "").strip("()")
    return float(text) if text[:1].isdigit() else 0.0


@pytest.mark.parametrize(("model", "size"), [(Zipped(), (2, 4)), (SharedActivation(), (2, 8))])
@pytest.mark.parametrize("depth", [1, 2])
def test_param_columns_add_up_when_a_container_runs_in_several_stretches(model, size, depth):
    s = summary(model, input_size=size, depth=depth, col_names=("num_params", "params_percent"))
    table = str(s)
    counts = _cells(table, len(s.layers), -2)
    assert sum(_number(c) for c in counts) == s.total_params
    assert sum(_number(c) for c in _cells(table, len(s.layers))) == pytest.approx(100.0, abs=0.05)
    first = next(r for r in s.layers if r.name == "layers")
    assert first.own_params == 0  # every Linear has a row under one of the container's rows


def _tree(table: str, rows: int) -> list[tuple[int, str]]:
    """(depth, label) of the first ``rows`` rows, the depth read from the indentation."""
    found = []
    for line in table.splitlines()[3:3 + rows]:
        label = line[:40].rstrip()  # the label column is 40 wide here
        depth = label.count("│") + 1 if "─" in label else 0
        found.append((depth, label.split("─")[-1].strip()))
    return found


def test_hide_recursive_layers_keeps_each_child_under_its_container():
    s = summary(Zipped(2), input_size=(2, 4), col_names=("num_params",),
                row_settings=("hide_recursive_layers", "var_names"))
    table = str(s)
    assert _tree(table, 9) == [
        (0, "Zipped"), (1, "layers (ModuleList)"), (2, "0 (Linear)"), (1, "norms (ModuleList)"),
        (2, "0 (LayerNorm)"), (1, "layers (ModuleList)"), (2, "1 (Linear)"), (1, "norms (ModuleList)"),
        (2, "1 (LayerNorm)")]
    assert sum(_number(c) for c in _cells(table, 9)) == s.total_params == 56


def test_a_tied_weight_counts_once_in_the_columns():
    s = summary(Tied(), input_data=torch.zeros(2, 5, dtype=torch.long),
                col_names=("num_params", "params_percent"))
    lines = str(s).splitlines()[3:6]
    assert lines[1].split()[-2:] == ["240", "100.00%"]
    assert lines[2].split()[-2:] == ["(tied)", "--"]
    s = summary(Tied(bias=True), input_data=torch.zeros(2, 5, dtype=torch.long),
                col_names=("num_params", "params_percent"))
    assert s.total_params == 270 and "30 (+tied)" in str(s)
    assert s.layers[2].params == 270  # the attribute still counts the layer's own tensors


def test_a_module_whose_children_never_run_is_a_leaf_of_the_activation_estimate():
    s = summary(WithAttention(), input_size=[(2, 5, 16)] * 3)
    assert s.layers[1].output_bytes == 2 * 5 * 16 * 4
    assert s.activation_bytes == s.layers[1].output_bytes


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_device_cuda_without_cuda_is_a_config_error_for_a_parameterless_model():
    with pytest.raises(ConfigError, match="no CUDA device"):
        summary(nn.ReLU(), input_size=(1, 3), device="cuda")
