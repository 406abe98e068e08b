"""``hookline inspect``: print a model's summary; with ``--grad``, gradient and activation statistics.

``hookline inspect [MODEL] [--model-args JSON] [--input-size 1,1,8,8] [--dtypes long] [--depth N] [--grad]
[--plot-dir D] [--metrics F]``

MODEL is ``package.module:ClassOrFactory`` or a registered model name
(default: the demo model ``hookline.demo.model:DigitsCNN``), called with
the ``--model-args`` JSON object as keyword arguments (none by default); it
must return an ``nn.Module``. The inputs: for the demo model with no
``--input-size`` and no ``--dtypes``, 16 real images of the demo's
``DigitsDataset("val")``; otherwise synthetic inputs of ``--input-size`` with
``--dtypes`` (seeded ``randn`` floats, zeros for integer dtypes, so an
``nn.Embedding`` gets valid indices). The first output line says which.
``--grad`` runs one forward and backward pass on them (cross-entropy
against the demo labels, or against random classes when the output is
``[N, classes]``, else the mean square of the output) and prints the
gradient and activation statistics; with ``--plot-dir`` it also writes
``gradient_flow.png``, ``activations.png`` and ``feature_maps.png`` (the
first conv layer's output for the first input) there. ``--metrics`` plots a
run's ``metrics.jsonl`` to ``training_curves.png`` in ``--plot-dir``.

Example::

    >>> import argparse
    >>> from hookline.app import inspect_command as command
    >>> parser = argparse.ArgumentParser(prog="hookline inspect")
    >>> command.add_arguments(parser)
    >>> args = parser.parse_args(["torch.nn:Identity", "--input-size", "2,3"])
    >>> command.run(args)  # doctest: +ELLIPSIS
    inputs: synthetic ...
    ===...
    Identity ...
    0
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError
from hookline.engine.environment import check_writable_folder
from hookline.inspect import (
    DTYPE_NAMES,
    ActivationStats,
    FeatureExtractor,
    GradientMonitor,
    summary,
)

from .inspect_inputs import (
    DEFAULT_MODEL,
    DEMO_BATCH,
    demo_batch,
    is_demo_model,
    load_model,
    parse_dtypes,
    parse_input_size,
    parse_model_args,
    synthetic_inputs,
)

DEFAULT_INPUT_SIZE = "1,1,8,8"  # for a model other than the demo's, when --input-size is not given
__all__ = ["DEFAULT_MODEL", "add_arguments", "load_model", "parse_input_size", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``inspect`` command's arguments to ``parser``."""
    parser.add_argument("model", nargs="?", default=DEFAULT_MODEL, metavar="MODEL",
                        help="package.module:ClassOrFactory or a registered model name "
                             f"(default: {DEFAULT_MODEL})")
    parser.add_argument("--model-args", default=None, metavar="JSON",
                        help="keyword arguments for MODEL as a JSON object, e.g. "
                             "'{\"num_classes\": 5}'")
    parser.add_argument("--input-size", default=None, metavar="N,C,...",
                        help="input shape with the batch dimension, comma-separated; several inputs "
                             f"separated by ';' (default: {DEMO_BATCH} real demo images for the demo model, "
                             f"else {DEFAULT_INPUT_SIZE})")
    parser.add_argument("--dtypes", default=None, metavar="D[,D...]",
                        help="dtype of each input, comma-separated (one for all): "
                             f"{', '.join(DTYPE_NAMES)}; integer inputs are zeros (default: float)")
    parser.add_argument("--depth", type=int, default=3, help="depth of the module tree shown (default: 3)")
    parser.add_argument("--grad", action="store_true",
                        help="run one forward and backward pass and print gradient and activation statistics")
    parser.add_argument("--plot-dir", type=Path, default=None, metavar="D",
                        help="write PNG plots here (implies --grad unless only --metrics is plotted)")
    parser.add_argument("--metrics", type=Path, default=None, metavar="FILE",
                        help="also plot a run's metrics.jsonl into --plot-dir")


def _pseudo_loss(output: Any, labels: torch.Tensor | None) -> torch.Tensor:
    if isinstance(output, (tuple, list)):
        output = output[0]
    if isinstance(output, dict):
        output = next(iter(output.values()))
    if output.dim() == 2 and output.is_floating_point() and output.shape[1] > 1:
        if labels is not None and int(labels.max()) < output.shape[1]:
            return nn.functional.cross_entropy(output, labels.to(output.device))
        generator = torch.Generator().manual_seed(0)
        targets = torch.randint(0, output.shape[1], (output.shape[0],), generator=generator).to(output.device)
        return nn.functional.cross_entropy(output, targets)
    return output.float().pow(2).mean()


def _check_grad(model: nn.Module, loss: torch.Tensor) -> None:
    """A ConfigError when no gradient can flow back from ``loss`` (the model's output)."""
    if not loss.requires_grad:
        raise ConfigError(f"--grad: the output of {type(model).__name__} does not require grad (no grad_fn: "
                          "an argmax, a detached or integer output, or torch.no_grad() inside forward), "
                          "so no gradient can flow back; --grad needs a float output computed from "
                          "parameters that require grad")


def _grad_report(model: nn.Module, inputs: list[torch.Tensor], labels: torch.Tensor | None,
                 plot_dir: Path | None) -> None:
    # matplotlib loads only when something is plotted
    from hookline.inspect.plots import (  # noqa: PLC0415 - matplotlib loads on first use
        plot_activation_histograms,
        plot_feature_maps,
        plot_gradient_flow,
    )

    # _ConvNd: the base of every torch conv layer, with no public name
    convs = [n for n, m in model.named_modules() if isinstance(m, nn.modules.conv._ConvNd)]  # noqa: SLF001
    try:
        activations: ActivationStats | None = ActivationStats(model)
    except ConfigError:  # no activation module
        activations = None
    model.train(inputs[0].dim() == 0 or inputs[0].shape[0] > 1)  # batch norm cannot train on a batch of one
    fx: FeatureExtractor | None = None
    try:
        with GradientMonitor(model) as grads:
            fx = FeatureExtractor(model, convs[:1]) if convs else None
            loss = _pseudo_loss(model(*inputs), labels)
            _check_grad(model, loss)
            loss.backward()
    finally:
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


def _inputs(model: nn.Module,
            args: argparse.Namespace) -> tuple[list[torch.Tensor], torch.Tensor | None, str]:
    """The inputs, the labels (demo images only) and a line saying what they are."""
    if args.input_size is None and args.dtypes is None and is_demo_model(model):
        images, labels = demo_batch()
        return [images], labels, (f"inputs: {len(images)} real demo images (DigitsDataset('val'), the first "
                                  f"{len(images)}), their labels for the --grad loss")
    sizes = parse_input_size(args.input_size if args.input_size is not None else DEFAULT_INPUT_SIZE)
    dtypes = parse_dtypes(args.dtypes, len(sizes))
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    inputs = synthetic_inputs(sizes, dtypes, device)
    described = "; ".join(f"{list(t.shape)} {str(t.dtype).removeprefix('torch.')}" for t in inputs)
    return inputs, None, (f"inputs: synthetic {described} (floats: randn seeded 0; integers: zeros)")


def run(args: argparse.Namespace) -> int:
    """Run ``hookline inspect`` with parsed ``args``; returns the exit status (0).

    Raises :class:`~hookline.core.ConfigError` for a bad MODEL, ``--model-args``,
    input size, dtypes or metrics file, before anything is built or written.
    """
    if args.depth < 0:
        raise ConfigError(f"--depth must be >= 0, got {args.depth}")
    if args.metrics is not None and args.plot_dir is None:
        raise ConfigError("--metrics needs --plot-dir to write training_curves.png into")
    model_args = parse_model_args(args.model_args)
    if args.input_size is not None:
        sizes = parse_input_size(args.input_size)
        parse_dtypes(args.dtypes, len(sizes))
    elif args.dtypes is not None:
        parse_dtypes(args.dtypes, 1)
    if args.metrics is not None and not args.metrics.is_file():
        raise ConfigError(f"--metrics {str(args.metrics)!r} is not a file (a run's metrics.jsonl)")
    if args.plot_dir is not None:
        check_writable_folder(args.plot_dir, "--plot-dir")
    model = load_model(args.model, model_args)
    inputs, labels, described = _inputs(model, args)
    print(described)
    try:
        table = summary(model, input_data=inputs, depth=args.depth)
    except RuntimeError as exc:  # the model refused the input: say so in one line
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        raise ConfigError(f"{type(model).__name__} cannot run on the input {described!r}: "
                          f"{type(cause).__name__}: {' '.join(str(cause).split())[:300]} "
                          "(give --input-size, and --dtypes for integer inputs)") from exc
    print(table)
    if args.grad or (args.plot_dir is not None and args.metrics is None):
        _grad_report(model, inputs, labels, args.plot_dir)
    if args.metrics is not None:
        from hookline.inspect.plots import (  # noqa: PLC0415 - matplotlib loads on first use
            plot_training_curves,
        )

        plot_training_curves(args.metrics, args.plot_dir / "training_curves.png")
        print(f"wrote training_curves.png to {args.plot_dir}")
    return 0
