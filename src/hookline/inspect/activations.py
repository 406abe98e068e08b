"""ActivationStats: mean, std, min, max, dead and saturated ratios of activation outputs.

Only forward hooks are used: no full backward hooks, which fail on in-place
activations (``ReLU(inplace=True)``). The statistics of each call are
reduced on the device at once, before a later in-place op can change the
output, and added to running totals there; ``report()`` copies them to the
host.

Example::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect import ActivationStats
    >>> net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(inplace=True), nn.Linear(32, 1), nn.Sigmoid())
    >>> with ActivationStats(net) as stats:
    ...     _ = net(torch.randn(64, 4))
    >>> sorted(stats.report()), 0.0 < stats.report()["1"]["dead"] < 1.0
    (['1', '3'], True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError

from ._format import text_table
from ._tool import HookTool

DEFAULT_TYPES: tuple[type[nn.Module], ...] = (
    nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.PReLU, nn.RReLU, nn.ELU, nn.SELU, nn.CELU, nn.GELU, nn.SiLU,
    nn.Mish, nn.Sigmoid, nn.Tanh, nn.Hardtanh, nn.Hardsigmoid, nn.Hardswish, nn.Softplus, nn.Softsign,
)
FIELDS = ("calls", "mean", "std", "min", "max", "dead", "saturated")


def output_bounds(module: nn.Module) -> tuple[float, float] | None:
    """The output range of a bounded activation (Sigmoid, Tanh, ReLU6 ...), or None."""
    if isinstance(module, nn.ReLU6):
        return (0.0, 6.0)
    if isinstance(module, nn.Hardtanh):
        return (float(module.min_val), float(module.max_val))
    if isinstance(module, (nn.Sigmoid, nn.Hardsigmoid)):
        return (0.0, 1.0)
    if isinstance(module, (nn.Tanh, nn.Softsign)):
        return (-1.0, 1.0)
    return None


class ActivationStats(HookTool):
    """Statistics of the outputs of activation modules, per layer, over all calls.

    Args:
        model: the model.
        types: the module classes to watch (default: torch's activations).
        saturation: a bounded activation's output within this fraction of its
            range from either bound counts as saturated (Sigmoid: below 0.01
            or above 0.99 with the default 0.01). Unbounded activations
            (ReLU, GELU ...) report ``saturated`` as None.
        samples: values of the latest call kept per layer for histograms
            (evenly strided; 0 keeps none).

    ``report()`` gives, per layer name: ``calls``, ``mean``, ``std``,
    ``min``, ``max``, ``dead`` (the fraction of outputs exactly zero) and
    ``saturated``, over every element of every call since the start or the
    last ``reset()``.
    """

    def __init__(self, model: nn.Module,
                 types: type[nn.Module] | Sequence[type[nn.Module]] = DEFAULT_TYPES, *,
                 saturation: float = 0.01, samples: int = 4096) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise ConfigError(f"ActivationStats expects an nn.Module, got {type(model).__name__}")
        given: tuple[object, ...] = tuple(types) if isinstance(types, (list, tuple)) else (types,)
        classes = tuple(t for t in given if isinstance(t, type) and issubclass(t, nn.Module))
        if len(classes) != len(given):
            raise ConfigError(f"types must be nn.Module subclasses, got {given!r}")
        if not 0 <= saturation < 0.5:
            raise ConfigError(f"saturation must be in [0, 0.5), got {saturation!r}")
        self.saturation, self.samples = saturation, int(samples)
        self.layers = [(n, m) for n, m in model.named_modules() if isinstance(m, classes)]
        if not self.layers:
            present = sorted({type(m).__name__ for m in model.modules()})
            wanted = ", ".join(t.__name__ for t in classes)
            raise ConfigError(f"{type(model).__name__} has no module of types {wanted} "
                              f"(module types present: {', '.join(present)})")
        self._totals: dict[str, list[Any]] = {}  # name -> [calls, elements, sums, min, max]
        self._samples: dict[str, torch.Tensor] = {}
        self._bounds = {n: output_bounds(m) for n, m in self.layers}
        for name, module in self.layers:
            self._hook_module(module, self._recorder(name), "forward", name)

    def _recorder(self, name: str) -> Callable[[nn.Module, Any, Any], None]:
        def record(_module: nn.Module, _args: Any, output: Any) -> None:
            if isinstance(output, torch.Tensor) and output.numel():
                with torch.no_grad():
                    self._add(name, output.detach())
        return record

    def _add(self, name: str, y: torch.Tensor) -> None:
        acc = torch.float32 if y.device.type == "mps" else torch.float64
        flat = y.reshape(-1)
        counted = [flat.sum(dtype=acc), torch.linalg.vector_norm(flat, dtype=acc).square(),
                   (flat == 0).sum().to(acc)]
        bounds = self._bounds[name]
        if bounds is not None:
            margin = self.saturation * (bounds[1] - bounds[0])
            counted.append(((flat <= bounds[0] + margin) | (flat >= bounds[1] - margin)).sum().to(acc))
        low, high = torch.aminmax(flat)
        total = self._totals.get(name)
        if total is None:
            self._totals[name] = [1, flat.numel(), torch.stack(counted), low, high]
        else:  # calls and element counts are host ints: no device work for them
            total[0] += 1
            total[1] += flat.numel()
            total[2] += torch.stack(counted)
            total[3] = torch.minimum(total[3], low)
            total[4] = torch.maximum(total[4], high)
        if self.samples:
            step = max(1, flat.numel() // self.samples)
            self._samples[name] = flat[::step][: self.samples].clone()

    def report(self) -> dict[str, dict[str, Any]]:
        """Statistics per layer name (layers that have not run are left out)."""
        out: dict[str, dict[str, Any]] = {}
        for name, _module in self.layers:
            total = self._totals.get(name)
            if total is None:
                continue
            calls, count, sums, low, high = total
            s, ss, zeros, *saturated = sums.tolist()
            lo, hi = float(low), float(high)
            mean = s / count
            out[name] = {
                "calls": int(calls), "mean": mean, "std": max(ss / count - mean * mean, 0.0) ** 0.5,
                "min": lo, "max": hi, "dead": zeros / count,
                "saturated": saturated[0] / count if saturated else None,
            }
        return out

    def sample(self, name: str) -> torch.Tensor:
        """Values of the latest output of layer ``name`` (up to ``samples``, on the CPU)."""
        if name not in self._bounds:
            raise ConfigError.unknown("activation layer", name, self._bounds)
        if name not in self._samples:
            return torch.empty(0)
        return self._samples[name].float().cpu()

    def reset(self) -> None:
        """Forget the statistics gathered so far."""
        self._totals.clear()
        self._samples.clear()

    def table(self) -> str:
        """``report()`` as a text table."""
        rows = [[name, *(stats[f] for f in FIELDS)] for name, stats in self.report().items()]
        return text_table(["layer", *FIELDS], rows, title="activations")
