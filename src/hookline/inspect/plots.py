"""PNG plots: gradient flow, activation histograms, feature maps, training curves.

Every function builds a ``matplotlib.figure.Figure`` on the Agg canvas (never
``pyplot``, so no global figure state and no GUI backend), returns it, and
writes a PNG when ``path`` is given.

Example::

    >>> import torch
    >>> from hookline.inspect import plot_feature_maps
    >>> fig = plot_feature_maps(torch.randn(1, 8, 6, 6))
    >>> len(fig.axes)
    8
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from torch import nn

from hookline.core import ConfigError

from .activations import ActivationStats
from .curves import collect_series, constant_value, constants_note, read_metrics, use_log_scale
from .gradients import GradientMonitor

_ALERT_COLOR, _COLOR, _MAX_COLOR, _EMA_COLOR = "#d62728", "#1f77b4", "#ff7f0e", "#2ca02c"


def new_figure(width: float, height: float) -> Figure:
    """A Figure with its own Agg canvas."""
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save(fig: Figure, path: str | os.PathLike | None) -> Figure:
    """Write ``fig`` as PNG to ``path`` (creating folders) when a path is given; return ``fig``."""
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png", dpi=100)
    return fig


def _grid(count: int, cols: int) -> tuple[int, int]:
    cols = max(1, min(cols, count))
    return math.ceil(count / cols), cols


def _gradient_values(source: Any) -> tuple[dict[str, float], dict[str, float], set[str], Any]:
    """(norm per name, max |g| per name, names with an alert, monitor or None)."""
    if isinstance(source, GradientMonitor):
        report = source.report()
        flagged = {name for step, name, _kind in source.alerts if report.get(name, {}).get("step") == step}
        return ({n: s["norm"] for n, s in report.items()}, {n: s["abs_max"] for n, s in report.items()},
                flagged, source)
    if isinstance(source, nn.Module):
        norms, maxes = {}, {}
        for name, param in source.named_parameters():
            if param.grad is not None:
                g = param.grad.detach().float()
                norms[name], maxes[name] = float(torch.linalg.vector_norm(g)), float(g.abs().max())
        return norms, maxes, set(), None
    if isinstance(source, Mapping):
        norms = {n: float(v["norm"] if isinstance(v, Mapping) else v) for n, v in source.items()}
        maxes = {n: float(v.get("abs_max", v.get("max", math.nan))) for n, v in source.items()
                 if isinstance(v, Mapping) and ("abs_max" in v or "max" in v)}
        return norms, maxes, set(), None
    raise ConfigError(f"plot_gradient_flow expects a GradientMonitor, a module with gradients or a dict "
                      f"of norms, got {type(source).__name__}")


def plot_gradient_flow(source: Any, path: str | os.PathLike | None = None, *,
                       title: str = "Gradient flow") -> Figure:
    """Bar chart of the gradient norm of each parameter (log scale), with max |g| as markers.

    ``source`` is a :class:`GradientMonitor` (latest step; alerts in red and
    its thresholds drawn), a module whose ``.grad`` are set, or a dict
    ``{name: norm}`` / ``{name: {"norm": ..., "abs_max": ...}}`` (or ``"max"``, read as max |g|).
    """
    norms, maxes, flagged, monitor = _gradient_values(source)
    if not norms:
        raise ConfigError("no gradients to plot: run a backward pass first")
    names = list(norms)
    finite = [v for v in [*norms.values(), *maxes.values()] if math.isfinite(v) and v > 0]
    floor = min(finite) / 10 if finite else 1e-12
    top = max(finite) * 10 if finite else 1.0
    heights, colors = [], []
    for name in names:
        value = norms[name]
        bad = name in flagged or not math.isfinite(value) or value <= 0
        heights.append(top if not math.isfinite(value) else max(value, floor))
        colors.append(_ALERT_COLOR if bad else _COLOR)
    fig = new_figure(max(7.0, 0.35 * len(names) + 3), 4.5)
    ax = fig.add_subplot()
    ax.bar(range(len(names)), heights, color=colors, label="norm")
    for i, name in enumerate(names):
        value = norms[name]
        if not math.isfinite(value) or value <= 0:  # drawn at the edge of the axis: say what it is
            ax.text(i, heights[i], f"{value:g}", ha="center", va="bottom", fontsize=8, color=_ALERT_COLOR)
    if maxes:
        xs = [i for i, n in enumerate(names) if n in maxes and math.isfinite(maxes[n])]
        ax.scatter(xs, [max(maxes[names[i]], floor) for i in xs], color=_MAX_COLOR, marker="_", s=120,
                   zorder=3, label="max |g|")
    if monitor is not None:
        ax.axhline(monitor.vanish, color="gray", linestyle=":", linewidth=1,
                   label=f"vanish {monitor.vanish:g}")
        ax.axhline(monitor.explode, color="gray", linestyle="--", linewidth=1,
                   label=f"explode {monitor.explode:g}")
    ax.set_yscale("log")
    ax.set_ylim(floor / 2 if monitor is None else min(floor, monitor.vanish) / 2,
                top * 2 if monitor is None else max(top, monitor.explode) * 2)
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
    ax.set_ylabel("gradient")
    step = f" (step {monitor.step - 1})" if monitor is not None else ""
    ax.set_title(title + step + (f", {len(flagged)} alert(s) in red" if flagged else ""))
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return save(fig, path)


def plot_activation_histograms(stats: ActivationStats | Mapping[str, torch.Tensor],
                               path: str | os.PathLike | None = None, *, bins: int = 50,
                               cols: int = 4) -> Figure:
    """One histogram per activation layer, titled with its dead (and saturated) ratio.

    ``stats`` is an :class:`ActivationStats` (its latest samples) or a dict
    ``{name: tensor}``.
    """
    if isinstance(stats, ActivationStats):
        report = stats.report()
        samples = stats.latest_samples()  # kept across the resets of a logging hook
    elif isinstance(stats, Mapping):
        report = {}
        samples = {n: torch.as_tensor(v).detach().float().reshape(-1).cpu() for n, v in stats.items()}
    else:
        raise ConfigError(f"expected ActivationStats or a dict of tensors, got {type(stats).__name__}")
    samples = {n: v for n, v in samples.items() if v.numel()}
    if not samples:
        raise ConfigError("no activations to plot: run a forward pass first (with samples > 0 "
                          "for ActivationStats)")
    rows, ncols = _grid(len(samples), cols)
    fig = new_figure(3.2 * ncols, 2.6 * rows)
    for i, (name, values) in enumerate(samples.items()):
        ax = fig.add_subplot(rows, ncols, i + 1)
        values = values[torch.isfinite(values)]
        ax.hist(values.numpy(), bins=bins, color=_COLOR)
        info = report.get(name)
        label = name
        if info:
            label += f"\ndead {info['dead']:.0%}"
            if info["saturated"] is not None:
                label += f", saturated {info['saturated']:.0%}"
        ax.set_title(label, fontsize=8)
        ax.tick_params(labelsize=7)
    return save(fig, path)


def plot_feature_maps(feature: torch.Tensor, path: str | os.PathLike | None = None, *, max_maps: int = 32,
                      cols: int = 8, title: str | None = None) -> Figure:
    """A grid of the channels of a conv output (first sample of ``[N, C, H, W]``, or ``[C, H, W]``)."""
    if isinstance(feature, (list, tuple)) and feature and isinstance(feature[0], torch.Tensor):
        feature = feature[0]  # several calls: the first
    if not isinstance(feature, torch.Tensor) or feature.dim() not in (2, 3, 4):
        raise ConfigError("plot_feature_maps expects a tensor of shape [N, C, H, W], [C, H, W] or [H, W], "
                          f"got {getattr(feature, 'shape', type(feature).__name__)}")
    maps = feature.detach().float().cpu()
    maps = maps[0] if maps.dim() == 4 else maps
    maps = maps.unsqueeze(0) if maps.dim() == 2 else maps
    maps = maps[:max_maps]
    rows, ncols = _grid(len(maps), cols)
    fig = new_figure(1.4 * ncols + 0.4, 1.4 * rows + (0.4 if title else 0.1))
    for i, image in enumerate(maps):
        ax = fig.add_subplot(rows, ncols, i + 1)
        ax.imshow(image.numpy(), cmap="viridis", interpolation="nearest")
        ax.set_title(str(i), fontsize=7)
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=10)
    return save(fig, path)


def _curve_style(label: str) -> dict[str, Any]:
    """Line style of a training-curve series by its label (``"val (EMA weights)"`` is a val line)."""
    mode, _, weights = label.partition(" (")
    if mode == "train":
        return {"color": _COLOR, "linewidth": 1.2}
    if mode == "val":
        return {"color": _EMA_COLOR if weights else _ALERT_COLOR, "marker": "o", "markersize": 4,
                "linewidth": 1.5}
    return {"marker": "."}


def plot_training_curves(metrics: str | os.PathLike | Iterable[Mapping[str, Any]],
                         path: str | os.PathLike | None = None, *, x: str = "iter",
                         exclude: Iterable[str] = ("epoch",), cols: int = 3,
                         log_y: bool | None = None, fold_constants: bool = True) -> Figure:
    """Every numeric key of a run's ``metrics.jsonl`` against ``x``, train and val drawn separately.

    Records are split by their ``"mode"`` (``"train"``, ``"val"`` ...), and by
    the weights they were evaluated with: records with ``"weights": "ema"``
    (written by the logger while :class:`~hookline.hooks.EMAHook` has swapped
    the averaged weights in) are the line ``"val (EMA weights)"``. A record
    without ``x`` (a validation record that only has ``"epoch"``, say) is
    placed at the last ``x`` seen before it.

    A key with the same value in every record (a fixed learning rate) gets no
    panel but a line of text at the top, ``constant: lr = 0.003``, unless
    ``fold_constants=False``. Loss-like panels get a log y axis (see
    :func:`~hookline.inspect.curves.use_log_scale`): keys containing
    ``"loss"``, or positive values spanning more than 1.5 decades; never a
    panel with a value <= 0. ``log_y=False`` keeps every axis linear,
    ``log_y=True`` makes every positive panel logarithmic.

    Example::

        >>> records = [{"mode": "train", "iter": i, "loss": 4.0 / i, "lr": 0.01} for i in range(1, 9)]
        >>> fig = plot_training_curves(records)
        >>> [(ax.get_title(), ax.get_yscale()) for ax in fig.axes], fig.get_suptitle()
        ([('loss', 'log')], 'constant: lr = 0.01')
    """
    if log_y is not None and not isinstance(log_y, bool):
        raise ConfigError(f"log_y must be None (loss-like panels), True or False, got {log_y!r}")
    series = collect_series(read_metrics(metrics), x=x, exclude=exclude)
    if not series:
        raise ConfigError("no numeric metrics to plot")
    constants: dict[str, float] = {}
    if fold_constants:
        for key, by_label in series.items():
            value = constant_value(by_label)
            if value is not None:
                constants[key] = value
    panels = {key: by_label for key, by_label in series.items() if key not in constants}
    rows, ncols = _grid(len(panels), cols) if panels else (0, 1)
    fig = new_figure(4.2 * ncols if panels else 6.0, max(3.0 * rows + (0.4 if constants else 0.0), 0.8))
    if constants:
        fig.suptitle(constants_note(constants), fontsize=9)
    for i, (key, by_label) in enumerate(panels.items()):
        ax = fig.add_subplot(rows, ncols, i + 1)
        for label, (xs, ys) in by_label.items():
            ax.plot(xs, ys, label=label, **_curve_style(label))
        if use_log_scale(key, by_label, log_y):
            ax.set_yscale("log")
        ax.set_title(key, fontsize=9)
        ax.set_xlabel(x, fontsize=8)
        ax.tick_params(which="both", labelsize=7)  # log axes label minor ticks too
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return save(fig, path)
