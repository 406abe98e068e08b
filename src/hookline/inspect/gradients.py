"""GradientMonitor: per-parameter gradient statistics and alerts, without a host sync per step.

**What is monitored.** The parameters of a module, or tensors: one tensor, a
list of them, ``(name, tensor)`` pairs or a ``{name: tensor}`` dict. A leaf
tensor (a parameter) is read from ``.grad`` after accumulation; a non-leaf
tensor (an activation) through a tensor hook, with the gradient backward
computes for it.

**What a step is.** One backward pass that reaches at least one monitored
tensor: a post-accumulate-grad hook on each parameter notes the gradient,
and a callback queued on the autograd engine closes the step when that
backward finishes. ``loss.backward()`` once per iteration gives one step per
iteration; gradient accumulation over micro-batches gives one step per
micro-batch. ``torch.autograd.grad`` does not accumulate into ``.grad`` and
is not seen.

**Where statistics live.** On the gradients' device: each recorded step
stacks its statistics into one small tensor. They are copied to the host in
one batch when you read them (``report()``, ``alerts``, ``history()``) or
every 100 steps, so monitoring never synchronises per step.

**History.** The last ``history`` recorded steps (default 1000) are kept;
older ones are dropped. ``alerts`` keeps the last ``max_alerts`` alerts.

Example::

    >>> import torch
    >>> from torch import nn
    >>> from hookline.inspect import GradientMonitor
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> with GradientMonitor(net, explode=1e3) as monitor:
    ...     net(torch.randn(16, 4)).sum().backward()
    ...     net(torch.full((16, 4), float("nan"))).sum().backward()
    >>> monitor.step, sorted(monitor.report()) == sorted(n for n, _ in net.named_parameters())
    (2, True)
    >>> sorted({kind for _step, _name, kind in monitor.alerts})
    ['nan']
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError

from ._format import text_table
from ._tool import HookTool

STATS = ("norm", "mean", "std", "min", "max", "abs_max")
ALERT_KINDS = ("vanishing", "exploding", "nan", "inf")
FLUSH_EVERY = 100


def _grad_sums(grads: list[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    """``[L2 norm, sum, min, max]`` per gradient, as a ``[len(grads), 4]`` tensor on their device.

    The norms use ``torch._foreach_norm`` (one call for all gradients, as
    ``clip_grad_norm_`` does) where it applies; sparse gradients go one by one
    (their min and max are those of the stored values).
    """
    dense = [g.detach() for g in grads]
    if hasattr(torch, "_foreach_norm") and not any(g.is_sparse for g in dense):
        norms = torch._foreach_norm(dense, 2, dtype=dtype)  # noqa: SLF001
        sums = [g.sum(dtype=dtype) for g in dense]
        extremes = [torch.stack(torch.aminmax(g)).to(dtype) for g in dense]
        return torch.cat([torch.stack([torch.stack(norms), torch.stack(sums)], 1), torch.stack(extremes)], 1)
    rows = []
    for g in dense:
        g = g.coalesce().values() if g.is_sparse else g
        low, high = torch.aminmax(g)
        rows += [torch.linalg.vector_norm(g, dtype=dtype), g.sum(dtype=dtype), low.to(dtype), high.to(dtype)]
    return torch.stack(rows).view(-1, 4)


def _finish(raw: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Host ``[norm, mean, std, min, max, abs_max]`` (float32) from rows of ``[norm, sum, min, max]``."""
    norm, total, low, high = raw.double().unbind(1)
    mean = total / counts
    std = (norm * norm / counts - mean * mean).clamp_min(0).sqrt()
    abs_max = torch.maximum(low.abs(), high.abs())  # NaN when either is NaN
    return torch.stack([norm, mean, std, low, high, abs_max], 1).float()


def _named_tensors(source: Any) -> list[tuple[str, torch.Tensor]]:
    """``(name, tensor)`` pairs to monitor: a module's parameters, or tensors given directly."""
    if isinstance(source, nn.Module):
        return [(n, p) for n, p in source.named_parameters() if p.requires_grad]
    if isinstance(source, torch.Tensor):
        pairs: list[tuple[str, Any]] = [("tensor", source)]
    elif isinstance(source, Mapping):
        pairs = list(source.items())
    elif isinstance(source, Iterable) and not isinstance(source, (str, bytes)):
        items = list(source)
        named = all(isinstance(i, tuple) and len(i) == 2 and isinstance(i[0], str) for i in items)
        pairs = items if named and items else [(str(i), t) for i, t in enumerate(items)]
    else:
        raise ConfigError(f"GradientMonitor expects an nn.Module, a tensor, a list of tensors, "
                          f"(name, tensor) pairs or a {{name: tensor}} dict, got {type(source).__name__}")
    for name, tensor in pairs:
        if not isinstance(tensor, torch.Tensor):
            raise ConfigError(f"GradientMonitor: {name!r} is not a tensor, got {type(tensor).__name__}")
        if not tensor.requires_grad:
            raise ConfigError(f"GradientMonitor: tensor {name!r} does not require grad: it has no gradient "
                              "to monitor")
    if len({name for name, _ in pairs}) != len(pairs):
        raise ConfigError(f"GradientMonitor: tensor names must be unique, got {[n for n, _ in pairs]}")
    return pairs


class GradientMonitor(HookTool):
    """Gradient norm, mean, std, signed min and max, and largest absolute value per parameter; alerts.

    Args:
        model: the model (every parameter that requires grad is monitored), or
            the tensors to monitor: a tensor, a list of tensors (named ``"0"``,
            ``"1"`` ...), ``(name, tensor)`` pairs or a ``{name: tensor}`` dict.
        every: record statistics on steps ``0, every, 2 * every, ...``
            (steps are still counted in between).
        vanish: a gradient norm below this is a ``"vanishing"`` alert.
        explode: a gradient norm above this is an ``"exploding"`` alert.
        history: how many recorded steps to keep.
        max_alerts: how many alerts to keep (the latest).

    ``alerts`` lists ``(step, name, kind)`` with kind ``"vanishing"`` (norm
    below ``vanish``), ``"exploding"`` (norm above ``explode``), ``"nan"`` (the
    gradient has a NaN) or ``"inf"`` (it has an Inf and no NaN); the
    norm-based kinds apply to finite gradients only. Steps count from 0.

    Per recorded step, the device computes four reductions per tensor (L2
    norm, sum, min and max, in float64; the norms with one ``_foreach_norm``
    call for all of them); mean, std and ``abs_max`` (max |g|) are derived
    from them on the host, where each step is kept as a small float32 tensor.
    """

    def __init__(self, model: nn.Module | torch.Tensor | Iterable[Any] | Mapping[str, torch.Tensor],
                 every: int = 1, vanish: float = 1e-7, explode: float = 1e4, *,
                 history: int = 1000, max_alerts: int = 10_000) -> None:
        super().__init__()
        for label, value in (("every", every), ("history", history), ("max_alerts", max_alerts)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{label} must be an int >= 1, got {value!r}")
        for label, bound in (("vanish", vanish), ("explode", explode)):
            if not isinstance(bound, (int, float)) or isinstance(bound, bool) \
                    or math.isnan(bound):
                raise ConfigError(f"GradientMonitor {label} must be a number, got {bound!r}")
        if not 0 <= vanish < explode:
            raise ConfigError(f"need 0 <= vanish < explode, got vanish={vanish!r}, explode={explode!r}")
        params = _named_tensors(model)
        if not params:
            raise ConfigError(f"{type(model).__name__} has no parameter that requires grad to monitor")
        self.every, self.vanish, self.explode = every, vanish, explode
        self.names = [n for n, _ in params]
        self.step = 0
        self._task: int | None = None
        self._grads: list[tuple[str, torch.Tensor, torch.Tensor | None]] = []  # (name, tensor, grad or None)
        self._numel = {n: p.numel() for n, p in params}
        self._groups: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._pending: list[tuple[int, tuple[str, ...], torch.Tensor]] = []
        self._history: deque[tuple[int, tuple[str, ...], torch.Tensor]] = deque(maxlen=history)
        self._alerts: deque[tuple[int, str, str]] = deque(maxlen=max_alerts)
        self._latest: dict[str, tuple[int, torch.Tensor, int]] = {}
        for name, param in params:
            if param.grad_fn is None:  # a leaf: read .grad once it is accumulated
                self._hook_tensor(param, self._recorder(name), "post_accumulate_grad", name)
            else:  # an activation: its gradient as backward computes it
                self._hook_tensor(param, self._grad_recorder(name, param), "tensor", name)

    # -- during backward ---------------------------------------------------------------
    # torch has no public API to tell one backward pass from the next, or to run code at its end:
    # the graph task id and the engine's callback queue are what torch's own FSDP and module tracker use.
    def _recorder(self, name: str) -> Callable[[torch.Tensor], None]:
        def record(param: torch.Tensor) -> None:
            self._in_step()
            if self.step % self.every == 0 and param.grad is not None:
                self._grads.append((name, param, None))
        return record

    def _grad_recorder(self, name: str, tensor: torch.Tensor) -> Callable[[torch.Tensor], None]:
        def record(grad: torch.Tensor) -> None:
            self._in_step()
            if self.step % self.every == 0:
                self._grads.append((name, tensor, grad))
        return record

    def _in_step(self) -> None:
        """Open a step for the running backward pass if none is open; its end closes it."""
        task = torch._C._current_graph_task_id()  # noqa: SLF001
        if task != self._task:
            if self._task is not None:  # the previous backward raised before its end callback
                self._end_step()
            self._task = task
            torch.autograd.Variable._execution_engine.queue_callback(self._end_step)  # noqa: SLF001

    def _end_step(self) -> None:
        self._task = None
        grads, self._grads = self._grads, []
        by_device: dict[torch.device, list[tuple[str, torch.Tensor]]] = {}
        for name, param, given in grads:
            grad = param.grad if given is None else given
            if grad is not None and param.numel():  # None: cleared after a backward that raised
                by_device.setdefault(grad.device, []).append((name, grad))
        with torch.no_grad():
            for device, group in by_device.items():
                dtype = torch.float32 if device.type == "mps" else torch.float64
                raw = _grad_sums([g for _, g in group], dtype)
                key = tuple(n for n, _ in group)
                names = self._groups.get(key)
                if names is None:  # one names tuple per distinct group, shared by the steps
                    names = self._groups[key] = key
                self._pending.append((self.step, names, raw))
        self.step += 1
        if len(self._pending) >= FLUSH_EVERY:
            self._flush()

    # -- on the host -----------------------------------------------------------------
    def _flush(self) -> None:
        """Copy pending statistics to the host (one copy per device) and check them for alerts."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        host: dict[int, torch.Tensor] = {}
        alerts: list[tuple[int, str, str]] = []
        for device in {raw.device for _, _, raw in pending}:
            mine = [i for i, (_, _, raw) in enumerate(pending) if raw.device == device]
            rows = torch.cat([pending[i][2] for i in mine]).cpu()
            counts = torch.tensor([self._numel[n] for i in mine for n in pending[i][1]], dtype=torch.float64)
            stats = _finish(rows, counts)
            owners: list[tuple[int, str]] = []  # (step, name) of each row
            start = 0
            for i in mine:
                step, names, _raw = pending[i]
                host[i] = stats[start:start + len(names)]
                start += len(names)
                owners.extend((step, name) for name in names)
            norm, amax = stats[:, 0], stats[:, 5]
            finite = torch.isfinite(amax)
            masks = {"vanishing": (norm < self.vanish) & finite, "exploding": (norm > self.explode) & finite,
                     "nan": torch.isnan(amax), "inf": torch.isinf(amax)}
            for kind in ALERT_KINDS:
                alerts.extend((*owners[row], kind) for row in masks[kind].nonzero().flatten().tolist())
        for i, (step, names, _raw) in enumerate(pending):
            self._history.append((step, names, host[i]))
            for row, name in enumerate(names):
                self._latest[name] = (step, host[i], row)
        self._alerts.extend(sorted(alerts, key=lambda alert: alert[0]))

    def report(self) -> dict[str, dict[str, float]]:
        """The latest statistics per parameter: ``step``, ``norm``, ``mean``, ``std``, ``min``, ``max``,
        ``abs_max``.

        ``min`` and ``max`` are signed; ``abs_max`` is the largest absolute
        value. Parameters that never had a gradient are left out.
        """
        self._flush()
        out: dict[str, dict[str, float]] = {}
        for name in self.names:
            if name in self._latest:
                step, stats, row = self._latest[name]
                out[name] = {"step": step, **dict(zip(STATS, stats[row].tolist()))}
        return out

    @property
    def alerts(self) -> list[tuple[int, str, str]]:
        """``(step, parameter name, kind)`` for every alert so far (the latest ``max_alerts``)."""
        self._flush()
        return list(self._alerts)

    def history(self, name: str, stat: str = "norm") -> list[tuple[int, float]]:
        """``(step, value)`` of one statistic of one parameter over the kept history."""
        if stat not in STATS:
            raise ConfigError.unknown("gradient statistic", stat, STATS)
        if name not in self.names:
            raise ConfigError.unknown("parameter name", name, self.names)
        self._flush()
        column = STATS.index(stat)
        return [(step, float(stats[names.index(name), column]))
                for step, names, stats in self._history if name in names]

    def reset(self) -> None:
        """Forget statistics, history and alerts (the step count stays)."""
        self._pending.clear()
        self._history.clear()
        self._alerts.clear()
        self._latest.clear()

    def table(self) -> str:
        """The latest statistics as a text table, with each parameter's alerts of that step."""
        report = self.report()
        latest_alerts: dict[str, list[str]] = {}
        for step, name, kind in self._alerts:
            if name in report and report[name]["step"] == step:
                latest_alerts.setdefault(name, []).append(kind)
        rows: list[list[Any]] = [[name, *(stats[s] for s in STATS), ",".join(latest_alerts.get(name, []))]
                                 for name, stats in report.items()]
        return text_table(["parameter", *STATS, "alert"], rows, title=f"gradients (step {self.step - 1})")
