"""``hookline inspect``: print a model's summary; with ``--grad``, gradient and activation statistics.

``hookline inspect [MODEL] [--input-size 1,1,8,8] [--depth N] [--grad] [--plot-dir D] [--metrics F]``

MODEL is ``package.module:ClassOrFactory`` (default: the demo model
``hookline.demo.model:DigitsCNN``); it is called with no arguments and must
return an ``nn.Module``. ``--grad`` runs one forward and backward pass on
random data (cross-entropy against random classes when the output is
``[N, classes]``, else the mean square of the output) and prints the
gradient and activation statistics; with ``--plot-dir`` it also writes
``gradient_flow.png``, ``activations.png`` and ``feature_maps.png`` (the
first conv layer's output) there. ``--metrics`` plots a run's
``metrics.jsonl`` to ``training_curves.png`` in ``--plot-dir``.

Example::

    >>> import argparse
    >>> from hookline.inspect import command
    >>> parser = argparse.ArgumentParser(prog="hookline inspect")
    >>> command.add_arguments(parser)
    >>> args = parser.parse_args(["torch.nn:Identity", "--input-size", "2,3"])
    >>> command.run(args)  # doctest: +ELLIPSIS
    ===...
    Identity ...
    0
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError
from hookline.core.errors import closest_names

from .activations import ActivationStats
from .features import FeatureExtractor
from .gradients import GradientMonitor
from .summary import summary

DEFAULT_MODEL = "hookline.demo.model:DigitsCNN"
DEFAULT_INPUT_SIZE = "1,1,8,8"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``inspect`` command's arguments to ``parser``."""
    parser.add_argument("model", nargs="?", default=DEFAULT_MODEL, metavar="MODEL",
                        help="package.module:ClassOrFactory, called with no arguments "
                             f"(default: {DEFAULT_MODEL})")
    parser.add_argument("--input-size", default=DEFAULT_INPUT_SIZE, metavar="N,C,...",
                        help="input shape with the batch dimension, comma-separated; several inputs "
                             f"separated by ';' (default: {DEFAULT_INPUT_SIZE})")
    parser.add_argument("--depth", type=int, default=3, help="depth of the module tree shown (default: 3)")
    parser.add_argument("--grad", action="store_true",
                        help="run one forward and backward pass on random data and print gradient and "
                             "activation statistics")
    parser.add_argument("--plot-dir", type=Path, default=None, metavar="D",
                        help="write PNG plots here (implies --grad unless only --metrics is plotted)")
    parser.add_argument("--metrics", type=Path, default=None, metavar="FILE",
                        help="also plot a run's metrics.jsonl into --plot-dir")


def load_model(spec: str) -> nn.Module:
    """Build the model named by ``package.module:ClassOrFactory`` (attribute paths may be dotted)."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise ConfigError(f"MODEL must look like 'package.module:ClassOrFactory', got {spec!r}")
    module_name, attr_path = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"cannot import module {module_name!r} of MODEL {spec!r}: {err}") from None
    target: Any = module
    for part in attr_path.split("."):
        if not hasattr(target, part):
            names = [n for n in dir(target) if not n.startswith("_") and callable(getattr(target, n, None))]
            close = closest_names(part, names)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ConfigError(f"{module_name!r} has no attribute {attr_path!r} (MODEL {spec!r}){hint}")
        target = getattr(target, part)
    if isinstance(target, nn.Module):
        return target
    if not callable(target):
        raise ConfigError(f"MODEL {spec!r} is a {type(target).__name__}, not a class or factory")
    try:
        model = target()
    except TypeError as err:
        raise ConfigError(f"MODEL {spec!r} cannot be called with no arguments: {err}") from None
    if not isinstance(model, nn.Module):
        raise ConfigError(f"MODEL {spec!r} returned a {type(model).__name__}, not an nn.Module")
    return model


def parse_input_size(text: str) -> list[tuple[int, ...]]:
    """``"1,1,8,8"`` -> ``[(1, 1, 8, 8)]``; ``"2,5;2,3"`` -> two inputs."""
    sizes = []
    for part in str(text).split(";"):
        try:
            size = tuple(int(d) for d in part.replace("x", ",").split(",") if d.strip())
        except ValueError:
            size = ()
        if not size or any(d <= 0 for d in size):
            raise ConfigError(f"--input-size must be positive integers separated by commas, like "
                              f"{DEFAULT_INPUT_SIZE} (';' between several inputs), got {text!r}")
        sizes.append(size)
    return sizes


def _pseudo_loss(output: Any) -> torch.Tensor:
    if isinstance(output, (tuple, list)):
        output = output[0]
    if isinstance(output, dict):
        output = next(iter(output.values()))
    if output.dim() == 2 and output.is_floating_point() and output.shape[1] > 1:
        targets = torch.randint(0, output.shape[1], (output.shape[0],), device=output.device)
        return nn.functional.cross_entropy(output, targets)
    return output.float().pow(2).mean()


def _grad_report(model: nn.Module, sizes: list[tuple[int, ...]], plot_dir: Path | None) -> None:
    # matplotlib loads only when something is plotted
    from .plots import plot_activation_histograms, plot_feature_maps, plot_gradient_flow  # noqa: PLC0415

    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    inputs = [torch.randn(*size, device=device) for size in sizes]
    # _ConvNd: the base of every torch conv layer, with no public name
    convs = [n for n, m in model.named_modules() if isinstance(m, nn.modules.conv._ConvNd)]  # noqa: SLF001
    try:
        activations: ActivationStats | None = ActivationStats(model)
    except ConfigError:  # no activation module
        activations = None
    model.train(sizes[0][0] > 1)  # batch norm cannot train on a batch of one
    with GradientMonitor(model) as grads:
        fx = FeatureExtractor(model, convs[:1]) if convs else None
        _pseudo_loss(model(*inputs)).backward()
    for tool in (fx, activations):
        if tool is not None:
            tool.remove()
    print()
    print(grads.table())
    for step, name, kind in grads.alerts:
        print(f"alert: step {step}: {name}: {kind}")
    if activations is not None:
        print()
        print(activations.table())
    if plot_dir is None:
        return
    plot_gradient_flow(grads, plot_dir / "gradient_flow.png")
    written = ["gradient_flow.png"]
    if activations is not None and activations.report():
        plot_activation_histograms(activations, plot_dir / "activations.png")
        written.append("activations.png")
    feature = fx.features.get(convs[0]) if fx is not None else None
    if isinstance(feature, torch.Tensor) and feature.dim() == 4:
        plot_feature_maps(feature, plot_dir / "feature_maps.png", title=f"{convs[0]} output")
        written.append("feature_maps.png")
    print(f"\nwrote {', '.join(written)} to {plot_dir}")


def run(args: argparse.Namespace) -> int:
    """Run ``hookline inspect`` with parsed ``args``; returns the exit status (0).

    Raises :class:`~hookline.core.ConfigError` for a bad MODEL, input size or metrics file.
    """
    if args.depth < 0:
        raise ConfigError(f"--depth must be >= 0, got {args.depth}")
    if args.metrics is not None and args.plot_dir is None:
        raise ConfigError("--metrics needs --plot-dir to write training_curves.png into")
    model = load_model(args.model)
    sizes = parse_input_size(args.input_size)
    print(summary(model, input_size=sizes if len(sizes) > 1 else sizes[0], depth=args.depth))
    if args.grad or (args.plot_dir is not None and args.metrics is None):
        _grad_report(model, sizes, args.plot_dir)
    if args.metrics is not None:
        from .plots import plot_training_curves  # noqa: PLC0415 - matplotlib loads on first use

        plot_training_curves(args.metrics, args.plot_dir / "training_curves.png")
        print(f"wrote training_curves.png to {args.plot_dir}")
    return 0
