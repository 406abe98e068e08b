"""hookline.inspect: PyTorch module and tensor hook tools.

Every tool registers through torch's own hook APIs, keeps hookline handles,
and is a context manager that removes every hook it added on exit::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect import FeatureExtractor
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> with FeatureExtractor(net, ["1"]) as fx:
    ...     _ = net(torch.randn(2, 4))
    >>> fx.features["1"].shape, len(net[1]._forward_hooks)
    (torch.Size([2, 8]), 0)
"""

from typing import TYPE_CHECKING, Any

from hookline.core.dependencies import raise_missing as _raise_missing

try:  # first: without PyTorch, one error saying what to install
    import torch as _torch  # noqa: F401
except ModuleNotFoundError as _exc:
    _raise_missing(_exc, "hookline.inspect")

from ._inputs import DTYPE_NAMES, parse_dtype
from .activations import ActivationStats
from .clipping import clip_gradients, edit_gradients
from .features import FeatureExtractor
from .gradients import GradientMonitor
from .manager import HookManager
from .model_summary import LayerRecord, ModelSummary
from .profiler import LayerProfiler, LayerTime
from .summary import summary
from .transforms import transform_inputs, transform_outputs

if TYPE_CHECKING:  # loaded by __getattr__ at run time (matplotlib on first use)
    from .plots import (
        plot_activation_histograms,
        plot_feature_maps,
        plot_gradient_flow,
        plot_training_curves,
    )

_PLOTS = ("plot_gradient_flow", "plot_activation_histograms", "plot_feature_maps", "plot_training_curves")

__all__ = [
    "HookManager",
    "FeatureExtractor",
    "summary",
    "ModelSummary",
    "LayerRecord",
    "GradientMonitor",
    "clip_gradients",
    "edit_gradients",
    "ActivationStats",
    "LayerProfiler",
    "LayerTime",
    "transform_inputs",
    "transform_outputs",
    "parse_dtype",
    "DTYPE_NAMES",
    "plot_gradient_flow",
    "plot_activation_histograms",
    "plot_feature_maps",
    "plot_training_curves",
]


def __getattr__(name: str) -> Any:
    """The plot functions load matplotlib only when first used."""
    if name in _PLOTS:
        try:
            from . import plots  # noqa: PLC0415 - matplotlib loads on first use
        except ModuleNotFoundError as exc:
            _raise_missing(exc, f"hookline.inspect.{name}")

        value = getattr(plots, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hookline.inspect' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
