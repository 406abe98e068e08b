"""GradientMonitorHook, and what it shares with ActivationStatsHook: the hookline.inspect tools
attached to a training run (:class:`ActivationStatsHook` lives in ``activation_stats.py``).

Both attach their tool in ``before_train`` and take every torch hook off again
in ``after_train`` (or ``on_exception``), so the model's hook tables end as
they began. Statistics stay on the device between log steps (GradientMonitor
also copies its pending statistics to the host every 100 backward passes);
every ``interval`` iterations the hook reads them once and writes:

- a text summary through ``runner.logger`` (console and ``log.txt``), with
  gradient alerts as warnings naming the parameter and the iteration;
- TensorBoard scalars, through the writer of the run's
  :class:`~hookline.hooks.TensorboardLoggerHook` when one is registered, at
  step ``iteration`` (1-based, like its ``train/*`` tags):
  ``grad_norm/total``, ``grad_norm/<parameter>``, ``grad_alerts/<kind>``,
  ``activations/<stat>/<layer>``;
- the latest values as a dict in ``runner.message_hub.info`` under
  ``"grad_stats"`` / ``"activation_stats"``, for other hooks and user code.

They do not put ``train/*`` scalars into the MessageHub: LoggerHook averages
each ``train/`` key over the last ``count`` values, one per iteration, and a
value read once per interval does not fit that. Only the main process
attaches the tools (it is the one that logs).

Example::

    >>> from hookline import HOOKS
    >>> hooks = [HOOKS.build({"type": "GradientMonitorHook", "interval": 20}),
    ...          HOOKS.build({"type": "ActivationStatsHook", "interval": 20, "types": ["ReLU"]})]
    >>> [hook.interval for hook in hooks]
    [20, 20]
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from hookline.core import ConfigError
from hookline.engine.checks import boolean, is_number, non_negative_int, positive_int
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS
from hookline.inspect import GradientMonitor
from hookline.inspect.gradients import ALERT_KINDS

from .log_steps import log_window
from .tensorboard import TensorboardLoggerHook

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

#: keys of ``runner.message_hub.info`` the hooks publish their latest values under
GRAD_STATS_KEY = "grad_stats"
ACTIVATION_STATS_KEY = "activation_stats"
_MAX_NAMES = 10  # parameters named per alert warning


def tensorboard_writer(runner: Runner) -> Any:
    """The SummaryWriter of the runner's TensorboardLoggerHook, or None (none registered, not
    the main process, or closed)."""
    for hook in runner.hooks.hooks:
        if isinstance(hook, TensorboardLoggerHook) and hook.writer is not None:
            return hook.writer
    return None


class _IntervalHook(Hook):
    """What both hooks share: the interval, the sampled iterations, and where a log step is."""

    priority = "LOW"  # after OptimizerHook's backward and LoggerHook's training line

    def __init__(self, interval: int, by_epoch: bool, every: int) -> None:
        self.interval: int = positive_int(interval, "interval", owner=type(self).__name__)
        self.every: int = positive_int(every, "every", owner=type(self).__name__)
        self.by_epoch = boolean(by_epoch, "by_epoch", owner=type(self).__name__)
        self._attached = False

    def _log_step(self, runner: Runner, batch_idx: int) -> bool:
        return log_window(runner, batch_idx, self.interval, self.by_epoch) is not None

    def _sampled(self, runner: Runner, batch_idx: int) -> bool:
        """Whether this iteration is recorded: every ``every``-th one, and each log step's."""
        return self.every == 1 or (runner.iter + 1) % self.every == 0 or self._log_step(runner, batch_idx)


class _Gate:
    """The switch of a gated inspect tool: its hooks do nothing while ``recording`` is false.

    The tool wraps its per-layer or per-parameter recorder (``_recorder(name)``)
    with :meth:`wrap` at registration, so pausing costs one attribute check per hook call.
    """

    recording = True

    def wrap(self, record: Callable[..., None]) -> Callable[..., None]:
        def gated(*args: Any) -> None:
            if self.recording:
                record(*args)
        return gated


class _GatedGradientMonitor(_Gate, GradientMonitor):
    """A GradientMonitor whose steps are only the backward passes made while ``recording``."""

    def _recorder(self, name: str) -> Callable[[torch.Tensor], None]:
        return self.wrap(super()._recorder(name))


# -- gradients ---------------------------------------------------------------------------------------
class _Selected(nn.Module):
    """Stands in for the model when only some layers are monitored: ``named_parameters()``
    gives the selected parameters under their names in the model."""

    def __init__(self, params: list[tuple[str, nn.Parameter]]) -> None:
        super().__init__()
        self.selected = params  # a plain list: not registered as this module's parameters

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, nn.Parameter]]:
        return iter(self.selected)


def select_parameters(model: nn.Module, layers: Sequence[str]) -> list[tuple[str, nn.Parameter]]:
    """The trainable parameters of the named modules (recursively) or named parameters of ``model``."""
    params = dict(model.named_parameters())
    modules = dict(model.named_modules())
    chosen: dict[int, tuple[str, nn.Parameter]] = {}
    for layer in layers:
        if layer in params:
            found = [(layer, params[layer])]
        elif layer in modules:
            found = list(modules[layer].named_parameters(prefix=layer))
        else:
            raise ConfigError.unknown("GradientMonitorHook layer (a module or parameter name)", layer,
                                      [n for n in modules if n] + list(params))
        for name, param in found:
            if param.requires_grad:
                chosen.setdefault(id(param), (name, param))
    if not chosen:
        raise ConfigError(f"GradientMonitorHook layers={list(layers)!r} select no parameter that "
                          f"requires grad in {type(model).__name__}")
    return list(chosen.values())


_CRITERIA = {"vanishing": "norm < {vanish:g}", "exploding": "norm > {explode:g}",
             "nan": "NaN values", "inf": "Inf values"}


def _listing(items: list[tuple[str, float]]) -> str:
    return ", ".join(f"{name} {norm:.2e}" for name, norm in items)


def _span(iters: list[int]) -> str:
    if len(iters) == 1:
        return f"iter {iters[0]}"
    return f"iters {iters[0]}-{iters[-1]}, {len(iters)} times"


@HOOKS.register()
class GradientMonitorHook(_IntervalHook):
    """Attaches a :class:`~hookline.inspect.GradientMonitor` to the model while it trains.

    The monitor records the gradient norm, mean, std and max of every
    monitored parameter at every backward pass, on the device (see
    docs/inspect.md for what that costs). Every ``interval`` iterations the
    hook reads it once and logs the gradient norms of that iteration (the
    total, and the ``top`` largest and smallest per parameter), and one
    warning per alert kind (vanishing, exploding, NaN, Inf) naming each
    parameter and the iterations it happened at, for every iteration since
    the previous log step. Alerts not yet logged when training stops or
    fails are logged then. TensorBoard gets ``grad_norm/total``,
    ``grad_norm/<parameter>`` and ``grad_alerts/<kind>`` (the number of
    alerts since the previous log step).

    Args:
        interval: iterations between log steps.
        vanish: a gradient norm below this is a ``"vanishing"`` alert.
        explode: a gradient norm above this is an ``"exploding"`` alert.
        layers: module or parameter names to monitor (a module stands for
            its parameters, recursively); None monitors every trainable
            parameter.
        by_epoch: count ``interval`` within each epoch, also logging at each
            epoch's end (like LoggerHook), or over the whole run.
        top: how many of the largest and of the smallest norms the text line
            names (all of them are written to TensorBoard).
        every: record the backward passes of every ``every``-th iteration
            only (and of each log step's iteration), which divides the
            monitor's cost by about ``every``; alerts then cover those
            iterations only.

    With AMP loss scaling (a GradScaler), backward produces scaled
    gradients: the logged norms are divided by the scale of the log step's
    iteration, and the vanishing/exploding checks run on those unscaled norms
    at log steps only (NaN/Inf are still checked every iteration; the
    GradScaler skips those steps). After training, ``hook.monitor`` stays
    readable (``table()``, ``history()``, ``plot_gradient_flow``). Nothing
    needs to go into checkpoints: the log steps follow ``runner.iter``, and
    the monitor is rebuilt when training starts.

    Example::

        >>> hook = GradientMonitorHook(interval=50, explode=1e3, layers=["backbone", "head.weight"])
        >>> hook.explode, hook.layers
        (1000.0, ['backbone', 'head.weight'])
    """

    def __init__(self, interval: int = 50, vanish: float = 1e-7, explode: float = 1e4,
                 layers: Sequence[str] | None = None, by_epoch: bool = True, top: int = 3,
                 every: int = 1) -> None:
        super().__init__(interval, by_epoch, every)
        for label, value in (("vanish", vanish), ("explode", explode)):
            if not is_number(value) or math.isnan(value):  # explode may be inf: never warn
                raise ConfigError(f"GradientMonitorHook {label} must be a number, got {value!r}")
        if not 0 <= vanish < explode:
            raise ConfigError(f"GradientMonitorHook needs 0 <= vanish < explode, got vanish={vanish!r}, "
                              f"explode={explode!r}")
        if isinstance(layers, str):
            layers = [layers]
        if layers is not None and (not isinstance(layers, Sequence) or not layers
                                   or not all(isinstance(n, str) for n in layers)):
            raise ConfigError(f"GradientMonitorHook layers must be None or a non-empty list of module "
                              f"or parameter names, got {layers!r}")
        non_negative_int(top, "top", owner="GradientMonitorHook")
        self.vanish, self.explode = float(vanish), float(explode)
        self.layers = list(layers) if layers is not None else None
        self.top = top
        self.monitor: _GatedGradientMonitor | None = None
        self._scaler: Any = None
        self._scale = 1.0
        self._window_step = 0  # the monitor's first step since the previous log step
        self._marks: list[int] = []  # the monitor's step at the start of each iteration of the window
        self._mark_iters: list[int] = []  # ... and that iteration (1-based)

    def __repr__(self) -> str:
        return (f"GradientMonitorHook(interval={self.interval}, vanish={self.vanish:g}, "
                f"explode={self.explode:g})")

    # -- attach / detach -------------------------------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        if not runner.is_main_process:
            return
        model = runner.model
        target = model if self.layers is None else _Selected(select_parameters(model, self.layers))
        scaler = runner.grad_scaler
        self._scaler = scaler if scaler is not None and scaler.is_enabled() else None
        # scaled gradients: the norm checks move to the log steps, on unscaled norms
        vanish, explode = (0.0, math.inf) if self._scaler is not None else (self.vanish, self.explode)
        self.monitor = _GatedGradientMonitor(target, every=1, vanish=vanish, explode=explode)
        self._window_step = 0
        self._marks, self._mark_iters = [], []
        self._attached = True

    def after_train(self, runner: Runner) -> None:
        self._detach(runner)

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        self._detach(runner)

    def _live(self) -> _GatedGradientMonitor | None:
        """The monitor while it is attached (training, on the main process), else None."""
        return self.monitor if self._attached else None

    def _detach(self, runner: Runner) -> None:
        monitor = self._live()
        if monitor is None:
            return
        self._attached = False
        try:  # alerts of the iterations since the last log step
            self._warn(runner, monitor, self._new_alerts(monitor))
        finally:
            monitor.remove()

    # -- per iteration: host-side bookkeeping only ----------------------------------------------------
    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        monitor = self._live()
        if monitor is None:
            return
        self._marks.append(monitor.step)
        self._mark_iters.append(runner.iter + 1)
        if self.every > 1:
            monitor.recording = self._sampled(runner, batch_idx)
        if self._scaler is not None and self._log_step(runner, batch_idx):
            self._scale = float(self._scaler.get_scale())  # the scale this backward uses

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        monitor = self._live()
        if monitor is not None and self._log_step(runner, batch_idx):
            self._log(runner, monitor, runner.iter + 1)

    # -- log steps -----------------------------------------------------------------------------
    def _iteration_of(self, step: int) -> int:
        at = bisect.bisect_right(self._marks, step) - 1
        return self._mark_iters[max(at, 0)] if self._mark_iters else step

    def _new_alerts(self, monitor: GradientMonitor) -> list[tuple[int, str, str]]:
        """``(iteration, parameter, kind)`` of the alerts since the previous log step."""
        start = self._window_step
        return [(self._iteration_of(step), name, kind) for step, name, kind in monitor.alerts
                if step >= start]

    def _log(self, runner: Runner, monitor: GradientMonitor, iteration: int) -> None:
        start = self._window_step
        stats = {n: s for n, s in monitor.report().items() if s["step"] >= start}
        alerts = self._new_alerts(monitor)
        scale = self._scale if self._scaler is not None else 1.0
        norms = {name: s["norm"] / scale for name, s in stats.items()}
        if self._scaler is not None:
            alerts += [(iteration, name, "vanishing" if norm < self.vanish else "exploding")
                       for name, norm in norms.items()
                       if math.isfinite(norm) and not self.vanish <= norm <= self.explode]
        order = {name: i for i, name in enumerate(monitor.names)}
        alerts.sort(key=lambda alert: (alert[0], order[alert[1]]))
        self._window_step = monitor.step
        self._marks, self._mark_iters = [], []
        total = math.sqrt(sum(v * v for v in norms.values()))
        if norms:
            runner.logger.info("gradients at iter %d: %s", iteration, self._summary(total, norms))
        self._warn(runner, monitor, alerts)
        counts = {kind: sum(1 for a in alerts if a[2] == kind) for kind in ALERT_KINDS}
        writer = tensorboard_writer(runner)
        if writer is not None:
            if norms:
                writer.add_scalar("grad_norm/total", total, iteration)
            for name, norm in norms.items():
                writer.add_scalar(f"grad_norm/{name}", norm, iteration)
            for kind, count in counts.items():
                writer.add_scalar(f"grad_alerts/{kind}", count, iteration)
        runner.message_hub.info[GRAD_STATS_KEY] = {
            "iter": iteration, "total_norm": total, "norms": norms, "alerts": alerts}

    def _summary(self, total: float, norms: dict[str, float]) -> str:
        ordered = sorted(norms.items(), key=lambda kv: -kv[1] if not math.isnan(kv[1]) else -math.inf)
        parts = [f"total norm {total:.3e}"]
        if self.top and len(ordered) <= 2 * self.top:
            parts.append(f"norms: {_listing(ordered)}")
        elif self.top:
            parts.append(f"largest: {_listing(ordered[:self.top])}")
            parts.append(f"smallest: {_listing(ordered[-self.top:])}")
        return "  ".join(parts)

    def _warn(self, runner: Runner, monitor: GradientMonitor,
              alerts: list[tuple[int, str, str]]) -> None:
        """One warning per alert kind, naming each parameter (in model order) and its iterations."""
        order = {name: i for i, name in enumerate(monitor.names)}
        for kind in ALERT_KINDS:
            by_name: dict[str, list[int]] = {}
            for iteration, name, alert_kind in alerts:
                if alert_kind == kind:
                    by_name.setdefault(name, []).append(iteration)
            if not by_name:
                continue
            named = [f"{name} ({_span(sorted(set(by_name[name])))})"
                     for name in sorted(by_name, key=order.__getitem__)]
            if len(named) > _MAX_NAMES:
                named = [*named[:_MAX_NAMES], f"... and {len(named) - _MAX_NAMES} more"]
            criterion = _CRITERIA[kind].format(vanish=self.vanish, explode=self.explode)
            runner.logger.warning("%s gradients (%s) in %d parameter(s): %s", kind, criterion,
                                  len(by_name), "; ".join(named))
