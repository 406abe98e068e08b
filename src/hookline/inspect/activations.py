"""ActivationStats: mean, std, min, max, dead and saturated ratios of activation outputs.

Only forward hooks are used (statistics of outputs need no backward pass), so
in-place activations (``ReLU(inplace=True)``) work. The statistics of each call are
reduced on the device at once, before a later in-place op can change the
output, and added to running totals there; ``report()`` copies them to the
host.

**Alerts.** A call whose dead fraction is above ``dead_threshold``, or (a
bounded activation) whose saturated fraction is above
``saturation_threshold`` (both off by default), is an alert ``(step, layer,
"dead" | "saturated")`` in ``.alerts``, like GradientMonitor's; a step is one
forward call of the model. The per-call fractions stay on the device and are
checked when you read ``alerts`` (or every 100 steps).

Example::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect import ActivationStats
    >>> net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(inplace=True), nn.Linear(32, 1), nn.Sigmoid())
    >>> with ActivationStats(net, dead_threshold=0.2) as stats:
    ...     _ = net(torch.randn(64, 4))
    >>> sorted(stats.report()), 0.0 < stats.report()["1"]["dead"] < 1.0
    (['1', '3'], True)
    >>> stats.alerts     # about half of a ReLU's outputs are 0: above 0.2
    [(0, '1', 'dead')]
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError

from ._format import text_table
from ._tool import HookTool
from .features import tensors_in

DEFAULT_TYPES: tuple[type[nn.Module], ...] = (
    nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.PReLU, nn.RReLU, nn.ELU, nn.SELU, nn.CELU, nn.GELU, nn.SiLU,
    nn.Mish, nn.Sigmoid, nn.Tanh, nn.Hardtanh, nn.Hardsigmoid, nn.Hardswish, nn.Softplus, nn.Softsign,
)
FIELDS = ("calls", "mean", "std", "min", "max", "dead", "saturated")
ALERT_KINDS = ("dead", "saturated")
FLUSH_EVERY = 100  # steps between two checks of the pending alerts


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


def _flatten_nested(y: torch.Tensor) -> torch.Tensor:
    """The elements of a nested tensor (torch's Transformer fast path passes them between layers)
    in one 1-d tensor: a nested tensor cannot be reshaped across its ragged dimension."""
    parts = [t.reshape(-1) for t in y.unbind()]
    return torch.cat(parts) if parts else y.new_zeros(0)


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
        dead_threshold: a call whose fraction of zero outputs is above this
            is a ``"dead"`` alert (None, the default: no dead alerts).
        saturation_threshold: a call of a bounded activation whose saturated
            fraction is above this is a ``"saturated"`` alert (None: none).
            With either threshold set, the per-call fractions are checked on
            the host every 100 steps (one copy); without, nothing is read
            before ``report()``.
        max_alerts: how many alerts to keep (the latest).

    A module whose output is not a tensor (``nn.GRU``/``nn.RNN`` return
    ``(output, h_n)``, ``nn.LSTM`` ``(output, (h_n, c_n))``) has the first
    tensor of its output recorded, depth first: for the recurrent layers, the
    output sequence (of a ``PackedSequence``, its ``data``); an output with no
    tensor in it is warned about once per layer and not recorded.

    ``report()`` gives, per layer name: ``calls``, ``mean``, ``std``,
    ``min``, ``max``, ``dead`` (the fraction of outputs exactly zero) and
    ``saturated``, over every element of every call since the start or the
    last ``reset()``. ``alerts`` lists ``(step, layer name, kind)``; ``step``
    counts the model's forward calls from 0.
    """

    def __init__(self, model: nn.Module,
                 types: type[nn.Module] | Sequence[type[nn.Module]] = DEFAULT_TYPES, *,
                 saturation: float = 0.01, samples: int = 4096, dead_threshold: float | None = None,
                 saturation_threshold: float | None = None, max_alerts: int = 10_000) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise ConfigError(f"ActivationStats expects an nn.Module, got {type(model).__name__}")
        given: tuple[object, ...] = tuple(types) if isinstance(types, (list, tuple)) else (types,)
        classes = tuple(t for t in given if isinstance(t, type) and issubclass(t, nn.Module))
        if len(classes) != len(given):
            raise ConfigError(f"types must be nn.Module subclasses, got {given!r}")
        if not 0 <= saturation < 0.5:
            raise ConfigError(f"saturation must be in [0, 0.5), got {saturation!r}")
        thresholds = (("dead_threshold", dead_threshold), ("saturation_threshold", saturation_threshold))
        for label, value in thresholds:
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not 0 <= value < 1):
                raise ConfigError(f"{label} must be a fraction in [0, 1) or None (no alerts), got {value!r}")
        if not isinstance(max_alerts, int) or isinstance(max_alerts, bool) or max_alerts < 1:
            raise ConfigError(f"max_alerts must be an int >= 1, got {max_alerts!r}")
        self.dead_threshold, self.saturation_threshold = dead_threshold, saturation_threshold
        self.step = 0  # forward calls of the model started
        self._pending: list[tuple[int, str, int, torch.Tensor]] = []  # (step, layer, elements, counts)
        self._alerts: deque[tuple[int, str, str]] = deque(maxlen=max_alerts)
        self.saturation, self.samples = saturation, int(samples)
        self.layers = [(n, m) for n, m in model.named_modules() if isinstance(m, classes)]
        if not self.layers:
            present = sorted({type(m).__name__ for m in model.modules()})
            wanted = ", ".join(t.__name__ for t in classes)
            raise ConfigError(f"{type(model).__name__} has no module of types {wanted} "
                              f"(module types present: {', '.join(present)})")
        self._totals: dict[str, list[Any]] = {}  # name -> [calls, elements, sums, min, max]
        self._samples: dict[str, torch.Tensor] = {}
        self._warned: set[str] = set()  # layers whose output had no tensor (warned once each)
        self._bounds = {n: output_bounds(m) for n, m in self.layers}
        self._hook_module(model, self._count_step, "forward_pre", "model", prepend=True)
        for name, module in self.layers:
            self._hook_module(module, self._recorder(name), "forward", name)

    def _count_step(self, _module: nn.Module, _args: Any) -> None:
        self.step += 1
        if len(self._pending) >= FLUSH_EVERY * len(self.layers):
            self._flush()

    def _recorder(self, name: str) -> Callable[[nn.Module, Any, Any], None]:
        def record(module: nn.Module, _args: Any, output: Any) -> None:
            if not isinstance(output, torch.Tensor):  # RNN (output, h_n), LSTM (output, (h_n, c_n)) ...
                found = tensors_in(output)
                if not found:
                    if name not in self._warned:
                        self._warned.add(name)
                        warnings.warn(f"ActivationStats: {name} ({type(module).__name__}) returned a "
                                      f"{type(output).__name__} with no tensor in it: nothing is recorded "
                                      "for it", stacklevel=2)
                    return
                output = found[0]
            if output.numel():
                with torch.no_grad():
                    self._add(name, output.detach())
        return record

    def _add(self, name: str, y: torch.Tensor) -> None:
        acc = torch.float32 if y.device.type == "mps" else torch.float64
        flat = _flatten_nested(y) if y.is_nested else y.reshape(-1)
        counted = [flat.sum(dtype=acc), torch.linalg.vector_norm(flat, dtype=acc).square(),
                   (flat == 0).sum().to(acc)]
        bounds = self._bounds[name]
        if bounds is not None:
            margin = self.saturation * (bounds[1] - bounds[0])
            counted.append(((flat <= bounds[0] + margin) | (flat >= bounds[1] - margin)).sum().to(acc))
        low, high = torch.aminmax(flat)
        stacked = torch.stack(counted)
        if self.dead_threshold is not None or (bounds is not None and self.saturation_threshold is not None):
            self._pending.append((max(self.step - 1, 0), name, flat.numel(), stacked))
        total = self._totals.get(name)
        if total is None:
            self._totals[name] = [1, flat.numel(), stacked.clone(), low, high]
        else:  # calls and element counts are host ints: no device work for them
            total[0] += 1
            total[1] += flat.numel()
            total[2] += stacked
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

    def _flush(self) -> None:
        """Copy the pending per-call counts to the host (one copy) and turn them into alerts."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        counts = torch.cat([c.reshape(-1) for *_, c in pending]).double().cpu().tolist()
        at = 0
        for step, name, elements, row in pending:
            values = counts[at:at + row.numel()]
            at += row.numel()
            if self.dead_threshold is not None and values[2] / elements > self.dead_threshold:
                self._alerts.append((step, name, "dead"))
            if (len(values) > 3 and self.saturation_threshold is not None
                    and values[3] / elements > self.saturation_threshold):
                self._alerts.append((step, name, "saturated"))

    @property
    def alerts(self) -> list[tuple[int, str, str]]:
        """``(step, layer name, kind)`` for every alert so far (the latest ``max_alerts``)."""
        self._flush()
        return list(self._alerts)

    def sample(self, name: str) -> torch.Tensor:
        """Values of the latest output of layer ``name`` (up to ``samples``, on the CPU)."""
        if name not in self._bounds:
            raise ConfigError.unknown("activation layer", name, self._bounds)
        if name not in self._samples:
            return torch.empty(0)
        return self._samples[name].float().cpu()

    def latest_samples(self) -> dict[str, torch.Tensor]:
        """:meth:`sample` of every layer that kept values, in layer order (what
        ``plot_activation_histograms`` draws)."""
        return {name: self.sample(name) for name in self._bounds if name in self._samples}

    def reset(self) -> None:
        """Forget the statistics and alerts gathered so far (the step count stays). The
        latest samples stay: they are the last call's values, for a histogram after training
        (a logging hook resets at every log step)."""
        self._totals.clear()
        self._pending.clear()
        self._alerts.clear()

    def table(self) -> str:
        """``report()`` as a text table, with the kinds of alert each layer had."""
        kinds: dict[str, list[str]] = {}
        for _step, name, kind in self.alerts:
            if kind not in kinds.setdefault(name, []):
                kinds[name].append(kind)
        rows = [[name, *(stats[f] for f in FIELDS), ",".join(kinds.get(name, []))]
                for name, stats in self.report().items()]
        return text_table(["layer", *FIELDS, "alerts"], rows, title="activations")
