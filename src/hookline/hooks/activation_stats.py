"""ActivationStatsHook: :class:`~hookline.inspect.ActivationStats` attached to a training run.

It logs like :class:`~hookline.hooks.GradientMonitorHook` (see ``inspect_hooks.py``):
a text block through ``runner.logger`` every ``interval`` iterations,
``activations/<stat>/<layer>`` scalars through the TensorboardLoggerHook's
writer when one is registered, and the latest values in
``runner.message_hub.info["activation_stats"]``.

Example::

    >>> from hookline import HOOKS
    >>> HOOKS.build({"type": "ActivationStatsHook", "interval": 20, "types": ["ReLU", "GELU"]})
    ActivationStatsHook(interval=20, types=['ReLU', 'GELU'])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from torch import nn

from hookline.core import ConfigError
from hookline.engine.checks import finite_float, non_negative_int
from hookline.engine.registries import HOOKS
from hookline.inspect import ActivationStats
from hookline.inspect.activations import DEFAULT_TYPES

from .inspect_hooks import ACTIVATION_STATS_KEY, _Gate, _IntervalHook, tensorboard_writer

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


class _GatedActivationStats(_Gate, ActivationStats):
    """ActivationStats that records only while ``recording`` is true: validation and test runs
    inside training, and the iterations not sampled, are left out of the windows."""

    def _recorder(self, name: str) -> Callable[[nn.Module, Any, Any], None]:
        return self.wrap(super()._recorder(name))


def _num(value: float) -> str:
    return f"{value:.4f}" if value == 0 or 1e-3 <= abs(value) < 1e4 else f"{value:.3e}"


def resolve_types(types: Any) -> tuple[type[nn.Module], ...]:
    """Module classes from classes or ``torch.nn`` class names (``"ReLU"``); None: the defaults."""
    if types is None:
        return DEFAULT_TYPES
    items = list(types) if isinstance(types, (list, tuple)) else [types]
    if not items:
        raise ConfigError("ActivationStatsHook types must name at least one module class")
    resolved = []
    for item in items:
        if isinstance(item, str):
            found = getattr(nn, item, None)
            if not (isinstance(found, type) and issubclass(found, nn.Module)):
                accepted = [n for n, v in vars(nn).items()
                            if isinstance(v, type) and issubclass(v, nn.Module)]
                raise ConfigError.unknown("ActivationStatsHook type (a torch.nn module class)", item,
                                          accepted)
            item = found
        if not (isinstance(item, type) and issubclass(item, nn.Module)):
            raise ConfigError(f"ActivationStatsHook types must be nn.Module classes or their torch.nn "
                              f"names, got {item!r}")
        resolved.append(item)
    return tuple(resolved)


@HOOKS.register()
class ActivationStatsHook(_IntervalHook):
    """Attaches :class:`~hookline.inspect.ActivationStats` to the model while it trains.

    Every ``interval`` iterations the hook reads the statistics of the
    activation layers over the training forward passes since the previous
    log step (validation and test runs inside training are not counted),
    logs mean, std, dead ratio and, for bounded activations, saturated
    ratio per layer, and starts a new window. TensorBoard gets
    ``activations/<stat>/<layer>`` for ``mean``, ``std``, ``dead`` and
    ``saturated``.

    Args:
        interval: iterations between log steps.
        types: the module classes to watch, as classes or ``torch.nn``
            names (``["ReLU", "GELU"]``); None: torch's activations.
        saturation: see :class:`~hookline.inspect.ActivationStats`.
        samples: values kept per layer from the latest call, for
            ``plot_activation_histograms(hook.stats)`` after training (0: none).
        by_epoch: count ``interval`` within each epoch, also logging at each
            epoch's end (like LoggerHook), or over the whole run.
        every: record the forward passes of every ``every``-th iteration only
            (and of each log step's iteration), which divides the cost by
            about ``every``.

    Nothing needs to go into checkpoints: the log steps follow
    ``runner.iter``, and after a resume the first window starts at the
    resumed iteration.

    Example::

        >>> hook = ActivationStatsHook(interval=100, types=["ReLU", "Sigmoid"])
        >>> [t.__name__ for t in hook.types]
        ['ReLU', 'Sigmoid']
    """

    def __init__(self, interval: int = 50, types: Any = None, saturation: float = 0.01,
                 samples: int = 0, by_epoch: bool = True, every: int = 1) -> None:
        super().__init__(interval, by_epoch, every)
        self.types = resolve_types(types)
        self.saturation = finite_float(saturation, "saturation", owner="ActivationStatsHook",
                                       low=0, high=0.5, open_high=True)
        self.samples = non_negative_int(samples, "samples", owner="ActivationStatsHook")
        self.stats: _GatedActivationStats | None = None
        self._was_recording = True

    def __repr__(self) -> str:
        return f"ActivationStatsHook(interval={self.interval}, types={[t.__name__ for t in self.types]})"

    def before_train(self, runner: Runner) -> None:
        if not runner.is_main_process:
            return
        self.stats = _GatedActivationStats(runner.model, self.types, saturation=self.saturation,
                                           samples=self.samples)
        self._attached = True

    def after_train(self, runner: Runner) -> None:
        self._detach()

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        self._detach()

    def _live(self) -> _GatedActivationStats | None:
        """The stats while they are attached (training, on the main process), else None."""
        return self.stats if self._attached else None

    def _detach(self) -> None:
        stats = self._live()
        if stats is not None:
            self._attached = False
            stats.remove()

    # -- what is recorded: sampled training iterations, no validation or test ----------------------
    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        stats = self._live()
        if stats is not None and self.every > 1:
            stats.recording = self._sampled(runner, batch_idx)

    def _pause(self) -> None:
        stats = self._live()
        if stats is not None:
            self._was_recording, stats.recording = stats.recording, False

    def _resume(self) -> None:
        stats = self._live()
        if stats is not None:
            stats.recording = self._was_recording

    def before_val(self, runner: Runner) -> None:
        self._pause()

    def after_val(self, runner: Runner) -> None:
        self._resume()

    def before_test(self, runner: Runner) -> None:
        self._pause()

    def after_test(self, runner: Runner) -> None:
        self._resume()

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        stats = self._live()
        if stats is None or not self._log_step(runner, batch_idx):
            return
        report = stats.report()
        stats.reset()
        if not report:
            return
        iteration = runner.iter + 1
        kinds = {name: type(module).__name__ for name, module in stats.layers}
        labels = {name: f"{name} ({kinds[name]})" for name in report}
        width = max(len(label) for label in labels.values())
        rows = []
        for name, s in report.items():
            row = (f"  {labels[name]:<{width}}  mean {_num(s['mean'])}  std {_num(s['std'])}  "
                   f"dead {s['dead']:.1%}")
            if s["saturated"] is not None:
                row += f"  saturated {s['saturated']:.1%}"
            rows.append(row)
        runner.logger.info("activations at iter %d:\n%s", iteration, "\n".join(rows))
        writer = tensorboard_writer(runner)
        if writer is not None:
            for name, s in report.items():
                for stat in ("mean", "std", "dead", "saturated"):
                    if s[stat] is not None:
                        writer.add_scalar(f"activations/{stat}/{name}", s[stat], iteration)
        runner.message_hub.info[ACTIVATION_STATS_KEY] = {"iter": iteration, "layers": report}
