"""PNG plots: each is written, is a real PNG, and no pyplot state is involved."""

import json
import sys

import pytest
import torch
from matplotlib.figure import Figure

from hookline.core import ConfigError
from hookline.inspect import (
    ActivationStats,
    GradientMonitor,
    plot_activation_histograms,
    plot_feature_maps,
    plot_gradient_flow,
    plot_training_curves,
)

from .models import MLP, SmallResNet

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _is_png(path) -> bool:
    return path.is_file() and path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 500


def test_gradient_flow_from_a_monitor_a_model_and_a_dict(tmp_path):
    torch.manual_seed(0)
    model = MLP()
    with GradientMonitor(model, explode=1.0) as monitor:
        model(torch.randn(8, 16)).sum().backward()
    fig = plot_gradient_flow(monitor, tmp_path / "sub" / "flow.png")
    assert isinstance(fig, Figure) and _is_png(tmp_path / "sub" / "flow.png")
    assert "alert" in fig.axes[0].get_title()
    plot_gradient_flow(model, tmp_path / "model.png")
    plot_gradient_flow({"a": 1.0, "b": {"norm": 0.0, "max": 0.0}, "c": float("nan")}, tmp_path / "dict.png")
    assert _is_png(tmp_path / "model.png") and _is_png(tmp_path / "dict.png")
    with pytest.raises(ConfigError, match="no gradients"):
        plot_gradient_flow(MLP())


def test_activation_histograms_and_feature_maps(tmp_path):
    model = SmallResNet()
    with ActivationStats(model) as stats:
        model(torch.randn(2, 3, 8, 8))
    fig = plot_activation_histograms(stats, tmp_path / "act.png")
    assert len(fig.axes) == 7 and "dead" in fig.axes[0].get_title() and _is_png(tmp_path / "act.png")
    plot_activation_histograms({"x": torch.randn(100)}, tmp_path / "act2.png")
    fig = plot_feature_maps(torch.randn(2, 40, 5, 5), tmp_path / "maps.png", max_maps=12, title="conv1")
    assert len(fig.axes) == 12 and _is_png(tmp_path / "maps.png")
    assert len(plot_feature_maps(torch.randn(3, 4, 4)).axes) == 3
    with pytest.raises(ConfigError, match=r"\[N, C, H, W\]"):
        plot_feature_maps(torch.randn(5))


def _write_metrics(path):
    lines = []
    for it in range(1, 41):
        lines.append({"mode": "train", "epoch": (it - 1) // 10, "iter": it, "loss": 2.0 / it,
                      "lr": 0.1 * 0.95 ** it})
        if it % 10 == 0:
            lines.append({"mode": "val", "epoch": it // 10 - 1, "loss": 2.5 / it, "accuracy": it / 45})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")


def test_training_curves_plot_every_numeric_key_train_and_val_separately(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    _write_metrics(metrics)
    fig = plot_training_curves(metrics, tmp_path / "curves.png")
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["loss", "lr", "accuracy"] and _is_png(tmp_path / "curves.png")
    loss = fig.axes[0]
    labels = sorted(line.get_label() for line in loss.get_lines())
    assert labels == ["train", "val"]
    val = next(line for line in loss.get_lines() if line.get_label() == "val")
    assert list(val.get_xdata()) == [10, 20, 30, 40]  # placed at the last iter before them


def test_training_curves_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"iter": 1, "loss": 1.0}\nnot json\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:2 is not valid JSON"):
        plot_training_curves(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        plot_training_curves(tmp_path / "missing.jsonl")
    with pytest.raises(ConfigError, match="no numeric"):
        plot_training_curves([{"iter": 1, "mode": "train", "note": "x"}])


def test_plots_never_touch_pyplot(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # importing pyplot now fails
    plot_feature_maps(torch.randn(1, 2, 3, 3), tmp_path / "maps.png")
    plot_training_curves([{"iter": 1, "loss": 1.0}, {"iter": 2, "loss": 0.5}], tmp_path / "curves.png")
    plot_gradient_flow({"w": 1.0}, tmp_path / "flow.png")
    plot_activation_histograms({"x": torch.randn(10)}, tmp_path / "act.png")
    assert all(_is_png(tmp_path / name) for name in ("maps.png", "curves.png", "flow.png", "act.png"))
