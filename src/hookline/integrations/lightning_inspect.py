"""hookline's inspect tools as ready Lightning callbacks, logging through the Trainer's loggers.

- :class:`GradientMonitorCallback`: :class:`~hookline.hooks.GradientMonitorHook`
  in a Trainer; every ``interval`` batches ``grad_norm/total``,
  ``grad_norm/<parameter>`` and ``grad_alerts/<kind>`` go to every logger of
  the Trainer (``logger.log_metrics``), and the text summary and alert
  warnings to the console;
- :class:`ActivationStatsCallback`: :class:`~hookline.hooks.ActivationStatsHook`;
  ``activations/<stat>/<layer>`` to the loggers;
- :class:`FeatureExtractorCallback`: a :class:`~hookline.inspect.FeatureExtractor`
  during validation and test (or predict): the named layers' outputs of the
  whole pass, concatenated, in ``callback.features[stage][layer]``, and
  their mean and std to the loggers (``features/<layer>/mean`` ...).

Statistics stay on the device between log steps, as in a hookline run.

Example::

    >>> callback = GradientMonitorCallback(interval=10, layers=["net"])
    >>> callback.hook.interval, callback.hook.layers
    (10, ['net'])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import lightning.pytorch as pl
import torch

from hookline.core import ConfigError
from hookline.engine.hook import Hook
from hookline.hooks.activation_stats import ActivationStatsHook
from hookline.hooks.inspect_hooks import ACTIVATION_STATS_KEY, GRAD_STATS_KEY, GradientMonitorHook
from hookline.inspect import FeatureExtractor
from hookline.inspect.gradients import ALERT_KINDS

from .lightning import HookCallback

__all__ = ["ActivationStatsCallback", "FeatureExtractorCallback", "GradientMonitorCallback"]


def log_to_trainer(trainer: Any, metrics: dict[str, float], step: int) -> None:
    """``metrics`` to every logger of ``trainer`` (none: nothing is written)."""
    for logger in getattr(trainer, "loggers", None) or []:
        logger.log_metrics(metrics, step=step)


class _Publish(Hook):
    """After the tool's hook: a new entry of ``message_hub.info[key]`` goes to the loggers."""

    priority = "LOWEST"

    def __init__(self, key: str, scalars: Callable[[dict[str, Any]], dict[str, float]]) -> None:
        self.key, self.scalars = key, scalars
        self._last: Any = None

    def after_train_iter(self, runner: Any, batch_idx: int, data_batch: Any = None,
                         outputs: Any = None) -> None:
        entry = runner.message_hub.info.get(self.key)
        if entry is not None and entry is not self._last:
            self._last = entry
            log_to_trainer(runner.trainer, self.scalars(entry), step=int(entry["iter"]))


def _grad_scalars(entry: dict[str, Any]) -> dict[str, float]:
    scalars = {"grad_norm/total": entry["total_norm"]}
    scalars.update({f"grad_norm/{name}": norm for name, norm in entry["norms"].items()})
    for kind in ALERT_KINDS:
        scalars[f"grad_alerts/{kind}"] = sum(1 for alert in entry["alerts"] if alert[2] == kind)
    return scalars


def _activation_scalars(entry: dict[str, Any]) -> dict[str, float]:
    return {f"activations/{stat}/{layer}": stats[stat] for layer, stats in entry["layers"].items()
            for stat in ("mean", "std", "dead", "saturated") if stats.get(stat) is not None}


class GradientMonitorCallback(HookCallback):
    """Gradient norms and alerts of a Lightning run (arguments: :class:`GradientMonitorHook`'s).

    ``callback.monitor`` is the :class:`~hookline.inspect.GradientMonitor` (its
    ``table()``, ``history()``), readable after ``fit``.
    """

    def __init__(self, interval: int = 50, vanish: float = 1e-7, explode: float = 1e4,
                 layers: Sequence[str] | None = None, by_epoch: bool = True, top: int = 3,
                 every: int = 1) -> None:
        self.hook = GradientMonitorHook(interval=interval, vanish=vanish, explode=explode,
                                        layers=layers, by_epoch=by_epoch, top=top, every=every)
        super().__init__(self.hook, _Publish(GRAD_STATS_KEY, _grad_scalars))

    @property
    def monitor(self) -> Any:
        return self.hook.monitor


class ActivationStatsCallback(HookCallback):
    """Activation statistics of a Lightning run (arguments: :class:`ActivationStatsHook`'s).

    ``callback.stats`` is the :class:`~hookline.inspect.ActivationStats`.
    """

    def __init__(self, interval: int = 50, types: Any = None, saturation: float = 0.01,
                 samples: int = 0, by_epoch: bool = True, every: int = 1) -> None:
        self.hook = ActivationStatsHook(interval=interval, types=types, saturation=saturation,
                                        samples=samples, by_epoch=by_epoch, every=every)
        super().__init__(self.hook, _Publish(ACTIVATION_STATS_KEY, _activation_scalars))

    @property
    def stats(self) -> Any:
        return self.hook.stats


class FeatureExtractorCallback(pl.Callback):
    """The outputs of ``layers`` (module names of the LightningModule) over whole passes.

    Args:
        layers: module names, or ``{module name: key}``, as for ``FeatureExtractor``.
        stages: which passes: any of ``"validate"``, ``"test"``, ``"predict"``.
        to_cpu: move each batch's features to the CPU as they come (default), so a pass's
            features do not stay in device memory.
        log_stats: log each feature's mean and std over the pass to the Trainer's loggers.

    After a pass, ``callback.features[stage]`` maps each key to the tensor of the
    whole pass (batches concatenated along the first dimension; a layer with
    non-tensor outputs keeps the list of per-batch values).
    """

    _HOOKS = {"validate": "validation", "test": "test", "predict": "predict"}

    def __init__(self, layers: Any, stages: Sequence[str] = ("validate", "test"), *,
                 to_cpu: bool = True, log_stats: bool = True) -> None:
        super().__init__()
        unknown = [s for s in stages if s not in self._HOOKS]
        if unknown or not stages:
            raise ConfigError(f"FeatureExtractorCallback stages must be among "
                              f"{sorted(self._HOOKS)}, got {list(stages)!r}")
        self.layers, self.stages = layers, tuple(stages)
        self.to_cpu, self.log_stats = to_cpu, log_stats
        self.features: dict[str, dict[str, Any]] = {}
        self._extractor: FeatureExtractor | None = None
        self._batches: dict[str, list[Any]] = {}
        for stage, hook in self._HOOKS.items():
            if stage in self.stages:
                setattr(self, f"on_{hook}_epoch_start", self._starter(stage))
                setattr(self, f"on_{hook}_batch_end", self._collector(stage))
                setattr(self, f"on_{hook}_epoch_end", self._finisher(stage))

    @property
    def state_key(self) -> str:
        return self._generate_state_key(layers=repr(self.layers), stages=self.stages)

    def _starter(self, stage: str) -> Callable[..., None]:
        def start(trainer: Any, pl_module: Any) -> None:
            if getattr(trainer, "sanity_checking", False):
                return
            self._remove()
            # clone=True: no in-place check, which waits for a forward of pl_module itself (a
            # validation_step need not call it); features are taken and cleared per batch
            self._extractor = FeatureExtractor(pl_module, self.layers, to_cpu=self.to_cpu,
                                               clone=True)
            self._batches = {key: [] for key in self._extractor.layers}
        return start

    def _collector(self, stage: str) -> Callable[..., None]:
        def collect(*args: Any, **kwargs: Any) -> None:  # (trainer, pl_module, outputs, batch ...)
            extractor = self._extractor
            if extractor is None:
                return
            for key, value in extractor.features.items():
                self._batches[key].append(value)
            extractor.features, extractor.calls = {}, {}
        return collect

    def _finisher(self, stage: str) -> Callable[..., None]:
        def finish(trainer: Any, *args: Any) -> None:
            if self._extractor is None:
                return
            self._remove()
            features = {key: _concat(values) for key, values in self._batches.items()}
            self.features[stage] = features
            self._batches = {}
            if self.log_stats:
                stats = {}
                for key, value in features.items():
                    if isinstance(value, torch.Tensor) and value.is_floating_point():
                        stats[f"features/{key}/mean"] = float(value.mean())
                        stats[f"features/{key}/std"] = float(value.std()) if value.numel() > 1 \
                            else 0.0
                log_to_trainer(trainer, stats, step=int(getattr(trainer, "global_step", 0)))
        return finish

    def _remove(self) -> None:
        if self._extractor is not None:
            self._extractor.remove()
            self._extractor = None

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._remove()


def _concat(values: list[Any]) -> Any:
    if values and all(isinstance(v, torch.Tensor) and v.dim() > 0 for v in values):
        return torch.cat(values)
    return values
