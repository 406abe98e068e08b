"""GradientMonitor: per-parameter gradient statistics and alerts, without a host sync per step.

**What a step is.** One backward pass that reaches at least one monitored
parameter: a post-accumulate-grad hook on each parameter notes the gradient,
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

from collections import deque
from typing import Any

import torch
from torch import nn

from hookline.core import ConfigError

from ._format import text_table
from ._tool import HookTool

STATS = ("norm", "mean", "std", "max")
ALERT_KINDS = ("vanishing", "exploding", "nan", "inf")
FLUSH_EVERY = 100


def _grad_stats(grad: torch.Tensor) -> torch.Tensor:
    """``[norm, mean, std, max |g|, has NaN, has Inf]`` of ``grad`` as a float32 tensor on its device."""
    g = grad.detach()
    if g.is_sparse:
        g = g.coalesce().values()
    f = g.float()
    if f.numel() == 0:
        return torch.zeros(6, device=f.device)
    std, mean = torch.std_mean(f, correction=0)
    return torch.stack([torch.linalg.vector_norm(f), mean, std, f.abs().amax(),
                        torch.isnan(f).any().float(), torch.isinf(f).any().float()])


class GradientMonitor(HookTool):
    """Gradient norm, mean, std and max (absolute value) per parameter, and alerts.

    Args:
        model: the model; every parameter that requires grad is monitored.
        every: record statistics on steps ``0, every, 2 * every, ...``
            (steps are still counted in between).
        vanish: a gradient norm below this is a ``"vanishing"`` alert.
        explode: a gradient norm above this is an ``"exploding"`` alert.
        history: how many recorded steps to keep.
        max_alerts: how many alerts to keep (the latest).

    ``alerts`` lists ``(step, name, kind)`` with kind ``"vanishing"``,
    ``"exploding"``, ``"nan"`` or ``"inf"`` (a gradient with NaN or Inf gets
    those kinds, not a norm-based one). Steps count from 0.
    """

    def __init__(self, model: nn.Module, every: int = 1, vanish: float = 1e-7, explode: float = 1e4, *,
                 history: int = 1000, max_alerts: int = 10_000) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise ConfigError(f"GradientMonitor expects an nn.Module, got {type(model).__name__}")
        for label, value in (("every", every), ("history", history), ("max_alerts", max_alerts)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{label} must be an int >= 1, got {value!r}")
        if not 0 <= vanish < explode:
            raise ConfigError(f"need 0 <= vanish < explode, got vanish={vanish!r}, explode={explode!r}")
        params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not params:
            raise ConfigError(f"{type(model).__name__} has no parameter that requires grad to monitor")
        self.every, self.vanish, self.explode = every, vanish, explode
        self.names = [n for n, _ in params]
        self.step = 0
        self._task: int | None = None
        self._grads: list[tuple[str, torch.Tensor]] = []
        self._pending: list[tuple[int, tuple[str, ...], torch.Tensor]] = []
        self._history: deque[tuple[int, tuple[str, ...], list[list[float]]]] = deque(maxlen=history)
        self._alerts: deque[tuple[int, str, str]] = deque(maxlen=max_alerts)
        self._latest: dict[str, tuple[int, list[float]]] = {}
        for name, param in params:
            self._hook_tensor(param, self._recorder(name), "post_accumulate_grad", name)

    # -- during backward ---------------------------------------------------------------
    def _recorder(self, name: str):
        def record(param: torch.Tensor) -> None:
            task = torch._C._current_graph_task_id()
            if task != self._task:
                if self._task is not None:  # the previous backward raised before its end callback
                    self._end_step()
                self._task = task
                torch.autograd.Variable._execution_engine.queue_callback(self._end_step)
            if self.step % self.every == 0 and param.grad is not None:
                self._grads.append((name, param))
        return record

    def _end_step(self) -> None:
        self._task = None
        grads, self._grads = self._grads, []
        if grads:
            by_device: dict[torch.device, list[tuple[str, torch.Tensor]]] = {}
            for name, param in grads:
                if param.grad is not None:  # None: cleared after a backward that raised
                    by_device.setdefault(param.grad.device, []).append((name, param))
            with torch.no_grad():
                for group in by_device.values():
                    stats = torch.stack([_grad_stats(p.grad) for _, p in group])
                    self._pending.append((self.step, tuple(n for n, _ in group), stats))
        self.step += 1
        if len(self._pending) >= FLUSH_EVERY:
            self._flush()

    # -- on the host -----------------------------------------------------------------
    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if not pending:
            return
        rows_by_device: dict[torch.device, list[list[float]]] = {}
        for device in {stats.device for _, _, stats in pending}:
            batch = torch.cat([stats for _, _, stats in pending if stats.device == device])
            rows_by_device[device] = batch.cpu().tolist()  # one copy per device for all pending steps
        offsets = dict.fromkeys(rows_by_device, 0)
        for step, names, stats in pending:
            start = offsets[stats.device]
            rows = rows_by_device[stats.device][start:start + len(names)]
            offsets[stats.device] = start + len(names)
            self._history.append((step, names, rows))
            for name, row in zip(names, rows):
                self._latest[name] = (step, row)
                for kind in self._kinds(row):
                    self._alerts.append((step, name, kind))

    def _kinds(self, row: list[float]) -> list[str]:
        norm, _mean, _std, _max, nan, inf = row
        kinds = (["nan"] if nan else []) + (["inf"] if inf else [])
        if not kinds:
            if norm < self.vanish:
                kinds.append("vanishing")
            elif norm > self.explode:
                kinds.append("exploding")
        return kinds

    def report(self) -> dict[str, dict[str, float]]:
        """The latest statistics per parameter name: ``{"step", "norm", "mean", "std", "max"}``.

        ``max`` is the largest absolute value. Parameters that never had a
        gradient are left out.
        """
        self._flush()
        out: dict[str, dict[str, float]] = {}
        for name in self.names:
            if name in self._latest:
                step, row = self._latest[name]
                out[name] = {"step": step, **dict(zip(STATS, row[:4]))}
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
        return [(step, rows[names.index(name)][column])
                for step, names, rows in self._history if name in names]

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
