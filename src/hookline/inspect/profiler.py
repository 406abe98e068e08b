"""LayerProfiler: forward time per leaf module call, from forward pre-hooks and forward hooks.

On the CPU each call is timed with ``time.perf_counter``. On CUDA a pair of
CUDA events is recorded around each call and read when you ask for the
report, so profiling adds no synchronisation to the forward pass
(``synchronize=True`` synchronises around each call instead: slower, but
robust with several streams). The model's own forward is timed the same way,
so the table shows how much of it the layers account for (the rest is
functional code between layers, such as ``torch.flatten`` or ``x + y``).

A *leaf* is a module call during which no other module ran: a module
without submodules, or one that does not call its submodules in that call
(``nn.MultiheadAttention`` uses its ``out_proj`` weights functionally, so it
is timed as one layer).

``warmup=N`` runs the model's first N forward calls untimed (first calls pay
for allocation, kernel selection and lazy initialisation). Each layer reports
the mean and the standard deviation of its per-call times.

Example::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect import LayerProfiler
    >>> net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    >>> with LayerProfiler(net, warmup=1) as prof:
    ...     for _ in range(4):
    ...         _ = net(torch.randn(32, 64))
    >>> sorted(t.name for t in prof.report()), [t.calls for t in prof.report()], prof.forward_calls
    (['0', '1', '2'], [3, 3, 3], 3)
    >>> print(prof.table())  # doctest: +SKIP
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError

from ._format import text_table
from ._tool import HookTool

_MODEL = "\0model"  # key of the model's own forward
_PENDING_LIMIT = 10_000


@dataclass
class LayerTime:
    """Forward time of one module over all its calls."""

    name: str
    type_name: str
    calls: int
    total_ms: float
    percent: float = 0.0  # share of the model's measured forward time
    std_ms: float = 0.0  # standard deviation of the per-call times

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.calls if self.calls else 0.0


def _module_classes(types: Any) -> tuple[type[nn.Module], ...]:
    """``types`` as a tuple of ``nn.Module`` classes (one class alone is fine)."""
    classes = (types,) if isinstance(types, type) else tuple(types) \
        if isinstance(types, (list, tuple, set)) else None
    if not classes or not all(isinstance(c, type) and issubclass(c, nn.Module) for c in classes):
        raise ConfigError(f"types must be nn.Module classes (nn.Linear, or a list of them), "
                          f"got {types!r}")
    return classes


def _timing_device(device: Any) -> torch.device:
    """The device to time on; one this machine does not have is a ConfigError."""
    try:
        found = torch.device(device)
    except (RuntimeError, TypeError):
        raise ConfigError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}") from None
    if found.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r}: this machine has no CUDA device")
    if found.type not in ("cpu", "cuda"):
        raise ConfigError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    return found


class LayerProfiler(HookTool):
    """Times every leaf module call (or every module of ``types``), aggregated over calls.

    A leaf call is one during which no other module of the model ran (see the module's doc).
    A forward that raises keeps the times of the calls that ended, the model's included.

    Args:
        model: the model.
        types: time the modules of these classes instead of the leaves.
        device: ``"cuda"`` times with CUDA events; default: the device of the
            model's first parameter.
        synchronize: on CUDA, synchronise around each call instead of using events.
        warmup: the number of the model's first forward calls that run untimed.
    """

    def __init__(self, model: nn.Module, *, types: Sequence[type[nn.Module]] | None = None,
                 device: torch.device | str | None = None, synchronize: bool = False,
                 warmup: int = 0) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise ConfigError(f"LayerProfiler expects an nn.Module, got {type(model).__name__}")
        if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0:
            raise ConfigError(f"warmup must be an int >= 0 (forward calls left untimed), got {warmup!r}")
        self.warmup = warmup
        self._model_calls = 0  # the model's forward calls started, warm-up included
        self._leaves = types is None  # time a module's call only when no other module ran inside it
        self._ticks = 0  # module calls started so far (hooked modules)
        if types is None:
            targets = list(model.named_modules())
        else:
            classes = _module_classes(types)
            targets = [(n, m) for n, m in model.named_modules() if isinstance(m, classes)]
            if not targets:
                raise ConfigError(f"{type(model).__name__} has no module of types {types!r}")
        if device is None:
            first = next(iter(model.parameters()), None)
            device = first.device if first is not None else "cpu"
        self.device = _timing_device(device)
        self._events = self.device.type == "cuda" and not synchronize
        self._sync = self.device.type == "cuda" and synchronize
        self.model = model
        self._types = {n or type(model).__name__: type(m).__name__ for n, m in targets}
        self._totals: dict[str, list[float]] = {}  # name -> [calls, seconds, seconds squared]
        self._starts: dict[str, list[tuple[int, Any]]] = {}  # name -> (tick, start) of calls under way
        self._pending: list[tuple[str, Any, Any]] = []
        self._hook_module(model, self._model_starter, "forward_pre", "model", prepend=True)
        for name, module in targets:
            label = name or type(model).__name__
            self._hook_module(module, self._starter(label), "forward_pre", label)
            self._hook_module(module, self._stopper(label), "forward", label)
        # always_call: a forward that raised ends too, so its time and its layers' stay consistent
        self._hook_module(model, self._model_stopper, "forward", "model", always_call=True)

    def _now(self) -> Any:
        if self._events:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        if self._sync:
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def _model_starter(self, _module: nn.Module, _args: Any) -> None:
        self._model_calls += 1
        self._starts.setdefault(_MODEL, []).append((0, self._now()))

    def _model_stopper(self, _module: nn.Module, _args: Any, _output: Any) -> None:
        end = self._now()
        starts = self._starts.get(_MODEL)
        if not starts:
            return
        self._record(_MODEL, starts.pop()[1], end)
        if not starts and sys.exc_info()[1] is not None:  # the forward raised: drop the calls it left open
            self._drop_unfinished()

    def _drop_unfinished(self) -> None:
        """Forget the starts of module calls that never ended (a forward that raised)."""
        for starts in self._starts.values():
            starts.clear()

    def _starter(self, name: str) -> Callable[[nn.Module, Any], None]:
        starts = self._starts.setdefault(name, [])

        def start(_module: nn.Module, _args: Any) -> None:
            self._ticks += 1
            starts.append((self._ticks, self._now()))
        return start

    def _stopper(self, name: str) -> Callable[[nn.Module, Any, Any], None]:
        starts = self._starts[name]

        def stop(_module: nn.Module, _args: Any, _output: Any) -> None:
            end = self._now()
            if not starts:
                return
            tick, start = starts.pop()
            if self._leaves and tick != self._ticks:  # another module ran inside this call: not a leaf
                return
            self._record(name, start, end)
        return stop

    def _record(self, name: str, start: Any, end: Any) -> None:
        """Add one call's time (none during warm-up; CUDA events are read later)."""
        if self.warmup and self._model_calls <= self.warmup:  # a warm-up call: not timed
            return
        if self._events:
            self._pending.append((name, start, end))
            if len(self._pending) >= _PENDING_LIMIT:
                self._flush()
        else:
            self._add(name, end - start)

    def _add(self, name: str, seconds: float) -> None:
        total = self._totals.setdefault(name, [0, 0.0, 0.0])
        total[0] += 1
        total[1] += seconds
        total[2] += seconds * seconds

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending:
            torch.cuda.synchronize(self.device)
        for name, start, end in pending:
            self._add(name, start.elapsed_time(end) / 1000.0)

    @property
    def forward_ms(self) -> float:
        """Total measured time of the model's own forward calls."""
        self._flush()
        return self._totals.get(_MODEL, [0, 0.0, 0.0])[1] * 1000.0

    @property
    def forward_calls(self) -> int:
        """The model's timed forward calls (warm-up calls are not counted)."""
        self._flush()
        return int(self._totals.get(_MODEL, [0, 0.0, 0.0])[0])

    @property
    def layers_ms(self) -> float:
        """Sum of the times of the profiled modules."""
        return sum(t.total_ms for t in self.report())

    def report(self) -> list[LayerTime]:
        """One :class:`LayerTime` per module that ran, slowest (by total time) first."""
        self._flush()
        forward = self._totals.get(_MODEL, [0, 0.0, 0.0])[1]
        times = []
        for name, (calls, seconds, squares) in self._totals.items():
            if name == _MODEL:
                continue
            mean = seconds / calls
            std = max(squares / calls - mean * mean, 0.0) ** 0.5
            times.append(LayerTime(name, self._types[name], int(calls), seconds * 1000.0,
                                   100.0 * seconds / forward if forward else 0.0, std * 1000.0))
        return sorted(times, key=lambda t: t.total_ms, reverse=True)

    def reset(self) -> None:
        """Forget the times measured so far."""
        self._flush()
        self._totals.clear()

    def table(self) -> str:
        """``report()`` as a text table, with the model's forward time and the layers' share of it."""
        times = self.report()
        rows = [[t.name, t.type_name, t.calls, t.total_ms, t.mean_ms, t.std_ms, f"{t.percent:.1f}%"]
                for t in times]
        layers = sum(t.total_ms for t in times)
        forward = self.forward_ms
        share = f" ({100.0 * layers / forward:.1f}%)" if forward else ""
        title = (f"forward time per layer: layers {layers:.3f} ms{share} of model forward {forward:.3f} ms "
                 f"over {self.forward_calls} call(s)")
        header = ["layer", "type", "calls", "total ms", "mean ms", "std ms", "% of forward"]
        return text_table(header, rows, title=title)
