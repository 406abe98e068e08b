"""curves.png reads well: loss-like panels on a log axis, constant keys as one line of text,
validation with EMA weights labelled, from real metrics.jsonl files of real runs."""

from __future__ import annotations

import json

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.core import ConfigError
from hookline.hooks import EMAHook
from hookline.inspect import plot_training_curves
from hookline.inspect.curves import LOG_DECADES, use_log_scale

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def train(work_dir, hooks=(), max_epochs=3):
    """A small classifier, 8 batches an epoch, a fixed learning rate; returns its records."""
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,)))
    Runner(torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3)),
           optimizer={"type": "SGD", "lr": 0.05}, loss_fn=torch.nn.CrossEntropyLoss(),
           train_dataloader=DataLoader(data, batch_size=8, shuffle=True),
           val_dataloader=DataLoader(data, batch_size=32), metrics={"accuracy": "accuracy"},
           max_epochs=max_epochs, work_dir=work_dir, hooks=list(hooks),
           default_hooks={"checkpoint": None, "logger": {"type": "LoggerHook", "interval": 2}}
           ).train()
    metrics = work_dir / "metrics.jsonl"
    return metrics, [json.loads(line) for line in metrics.read_text().splitlines()]


def panels(fig):
    return {ax.get_title(): ax for ax in fig.axes}


def labels(ax):
    return [line.get_label() for line in ax.get_lines()]


def test_a_real_run_with_ema_labels_its_validation_and_folds_the_fixed_lr(tmp_path):
    # the first epoch's 8 iterations are not averaged: its validation uses the raw weights
    metrics, records = train(tmp_path, hooks=[EMAHook(decay=0.9, begin_iter=8)])
    val = [r for r in records if r["mode"] == "val"]
    assert ["weights" in r for r in val] == [False, True, True]
    assert val[1]["weights"] == "ema"
    assert all("weights" not in r for r in records if r["mode"] == "train")
    val_lines = [line for line in (tmp_path / "log.txt").read_text().splitlines()
                 if "Epoch(val)" in line]
    assert ["(EMA weights)" in line for line in val_lines] == [False, True, True]

    fig = plot_training_curves(metrics, tmp_path / "curves.png", exclude=("epoch", "time", "data_time"))
    assert (tmp_path / "curves.png").read_bytes()[:8] == PNG_MAGIC
    by_title = panels(fig)
    assert sorted(by_title) == ["accuracy", "loss"]  # lr is constant: no panel
    assert fig.get_suptitle() == "constant: lr = 0.05"
    assert by_title["loss"].get_yscale() == "log" and by_title["accuracy"].get_yscale() == "linear"
    assert labels(by_title["loss"]) == ["train", "val", "val (EMA weights)"]
    assert labels(by_title["accuracy"]) == ["val", "val (EMA weights)"]
    legend = [text.get_text() for text in by_title["loss"].get_legend().get_texts()]
    assert "val (EMA weights)" in legend
    ema_line = by_title["accuracy"].get_lines()[1]
    assert list(ema_line.get_xdata()) == [16, 24]


def test_a_run_without_ema_writes_no_weights_key(tmp_path):
    metrics, records = train(tmp_path, max_epochs=2)
    assert all("weights" not in r for r in records)
    fig = plot_training_curves(metrics, fold_constants=False)
    assert sorted(panels(fig)) == ["accuracy", "data_time", "loss", "lr", "time"]
    assert labels(panels(fig)["loss"]) == ["train", "val"] and fig.get_suptitle() == ""


def _records():
    """Records in LoggerHook's format: a loss falling over three decades, an lr decayed to 0,
    a positive metric spanning two decades, a signed one, an accuracy, a fixed momentum."""
    records = []
    for it in range(1, 101):
        records.append({"mode": "train", "epoch": (it - 1) // 20 + 1, "iter": it,
                        "lr": 0.1 * (100 - it) / 99, "momentum": 0.9, "loss": 5.0 / it ** 1.5,
                        "grad_norm": 100.0 / it, "reward": it - 50.5, "time": 0.01})
        if it % 20 == 0:
            records.append({"mode": "val", "epoch": it // 20, "iter": it, "weights": "ema",
                            "loss": 6.0 / it ** 1.5, "accuracy": 0.5 + it / 250})
    return records


def test_scales_follow_the_values(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    fig = plot_training_curves(path, tmp_path / "curves.png")
    scales = {title: ax.get_yscale() for title, ax in panels(fig).items()}
    assert scales == {"lr": "linear",          # reaches 0: never log
                      "loss": "log",           # the name says loss
                      "grad_norm": "log",      # positive, two decades
                      "reward": "linear",      # negative values
                      "accuracy": "linear",    # less than 1.5 decades
                      }
    assert fig.get_suptitle() == "constant: momentum = 0.9, time = 0.01"
    assert len(fig.axes) == 5
    assert labels(panels(fig)["accuracy"]) == ["val (EMA weights)"]
    linear = plot_training_curves(path, log_y=False)
    assert {ax.get_yscale() for ax in linear.axes} == {"linear"}
    every = plot_training_curves(path, log_y=True)
    assert [t for t, ax in panels(every).items() if ax.get_yscale() == "log"] == \
        ["loss", "grad_norm", "accuracy"]


def test_loss_with_a_zero_or_negative_value_stays_linear():
    zero = {"train": ([1, 2, 3], [1.0, 0.5, 0.0])}
    negative = {"train": ([1, 2], [2.0, -0.1])}
    assert not use_log_scale("loss", zero) and not use_log_scale("loss", negative)
    assert not use_log_scale("loss", negative, log_y=True)
    assert use_log_scale("loss", {"train": ([1, 2], [2.0, 1.9])})
    span = 10 ** LOG_DECADES
    assert use_log_scale("x", {"train": ([1, 2], [1.0, span * 1.01])})
    assert not use_log_scale("x", {"train": ([1, 2], [1.0, span * 0.99])})
    fig = plot_training_curves([{"iter": 1, "loss": 1.0}, {"iter": 2, "loss": 0.0}])
    assert fig.axes[0].get_yscale() == "linear"


def test_constants_need_two_equal_values_in_every_mode():
    one_val = [{"mode": "train", "iter": 1, "loss": 1.0}, {"mode": "train", "iter": 2, "loss": 0.5},
               {"mode": "val", "iter": 2, "accuracy": 0.7}]
    assert sorted(panels(plot_training_curves(one_val))) == ["accuracy", "loss"]
    differs_by_mode = [{"mode": "train", "iter": 1, "loss": 1.0}, {"mode": "train", "iter": 2, "loss": 1.0},
                       {"mode": "val", "iter": 2, "loss": 0.8}]
    assert list(panels(plot_training_curves(differs_by_mode))) == ["loss"]
    flat = [{"iter": i, "lr": 0.003, "loss": 0.25} for i in range(1, 4)]
    fig = plot_training_curves(flat)
    assert fig.axes == [] and fig.get_suptitle() == "constant: lr = 0.003, loss = 0.25"


def test_a_bad_log_y_is_a_config_error():
    with pytest.raises(ConfigError, match="log_y must be None"):
        plot_training_curves([{"iter": 1, "loss": 1.0}], log_y="auto")
