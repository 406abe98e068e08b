"""MMEngine's constructor signatures over hookline's built-in hooks.

``CheckpointHook``, ``LoggerHook`` and ``EarlyStoppingHook`` take MMEngine's
arguments and run hookline's implementations (atomic checkpoints, the
``metrics.jsonl`` log). Arguments hookline cannot honour (remote storage,
``published_keys``, ``save_begin``) are a :class:`ConfigError` naming them,
never silently ignored.

Example::

    >>> from hookline.compat.mmengine.hooks import CheckpointHook
    >>> hook = CheckpointHook(interval=2, save_best="acc", greater_keys=["acc"])
    >>> hook.interval, hook.rule
    (2, 'greater')
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hookline.core import ConfigError
from hookline.engine.checks import boolean, positive_int
from hookline.engine.logs import log_queued
from hookline.engine.metric_names import strip_val_prefix
from hookline.hooks import CheckpointHook as _CheckpointHook
from hookline.hooks import EarlyStoppingHook as _EarlyStoppingHook
from hookline.hooks import LoggerHook as _LoggerHook
from hookline.hooks.log_steps import epoch_length


def _refuse(owner: str, **options: Any) -> None:
    given = [f"{name}={value!r}" for name, value in options.items() if value]
    if given:
        raise ConfigError(f"{owner}: {', '.join(given)} is not supported by hookline (local "
                          "files only; see docs/porting.md)")


def _rule_from_keys(key: str | None, rule: str | None, greater_keys: Sequence[str] | None,
                    less_keys: Sequence[str] | None) -> str | None:
    """MMEngine's rule inference with custom ``greater_keys`` / ``less_keys``."""
    if rule is not None or key is None or key == "auto":
        return rule
    name = key.lower()
    for keys, inferred in ((greater_keys, "greater"), (less_keys, "less")):
        if keys and any(k.lower() == name for k in keys):
            return inferred
    for keys, inferred in ((greater_keys, "greater"), (less_keys, "less")):
        if keys and any(k.lower() in name for k in keys):
            return inferred
    return None


class CheckpointHook(_CheckpointHook):
    """MMEngine's ``CheckpointHook(interval=-1, by_epoch=True, save_optimizer=True,
    save_param_scheduler=True, out_dir=None, max_keep_ckpts=-1, save_last=True,
    save_best=None, rule=None, greater_keys=None, less_keys=None, filename_tmpl=None,
    backend_args=None, published_keys=None, save_begin=0)``.

    ``interval=-1`` saves only the last checkpoint (with ``save_last``). The
    schedulers are saved with the optimizer (``save_param_scheduler`` cannot
    differ from ``save_optimizer``). ``save_best`` takes one metric.
    """

    def __init__(self, interval: int = -1, by_epoch: bool = True, save_optimizer: bool = True,
                 save_param_scheduler: bool = True, out_dir: str | None = None,
                 max_keep_ckpts: int = -1, save_last: bool = True,
                 save_best: str | Sequence[str] | None = None,
                 rule: str | Sequence[str] | None = None,
                 greater_keys: Sequence[str] | None = None,
                 less_keys: Sequence[str] | None = None, filename_tmpl: str | None = None,
                 backend_args: dict[str, Any] | None = None,
                 published_keys: str | Sequence[str] | None = None, save_begin: int = 0,
                 file_client_args: dict[str, Any] | None = None) -> None:
        _refuse("CheckpointHook", backend_args=backend_args, file_client_args=file_client_args,
                published_keys=published_keys, save_begin=save_begin)
        if save_param_scheduler != save_optimizer:
            raise ConfigError("CheckpointHook: hookline saves the schedulers with the optimizer; "
                              "save_param_scheduler must equal save_optimizer")
        if not isinstance(save_best, (str, type(None))):
            if len(save_best) != 1:
                raise ConfigError(f"CheckpointHook save_best takes one metric in hookline, got "
                                  f"{list(save_best)}")
            save_best = save_best[0]
        if not isinstance(rule, (str, type(None))):
            rule = rule[0] if len(rule) == 1 else None
        rule = _rule_from_keys(save_best, rule, greater_keys, less_keys)
        if isinstance(interval, int) and not isinstance(interval, bool) and interval <= 0:
            interval = sys.maxsize  # MMEngine's -1: no periodic checkpoints
        super().__init__(interval=interval, by_epoch=by_epoch, save_optimizer=save_optimizer,
                         out_dir=out_dir, max_keep_ckpts=max_keep_ckpts, save_last=save_last,
                         save_best=save_best, rule=rule, filename_tmpl=filename_tmpl)


class LoggerHook(_LoggerHook):
    """MMEngine's ``LoggerHook(interval=10, ignore_last=True, interval_exp_name=1000,
    out_dir=None, out_suffix=..., keep_local=True, file_client_args=None,
    log_metric_by_epoch=True, backend_args=None)``: hookline's log lines and
    ``metrics.jsonl``, and every record also to ``runner.visualizer.add_scalars``
    as MMEngine writes it: unprefixed keys, ``vis_data/scalars.json`` and
    ``vis_data/<timestamp>.json``; training records carry ``epoch`` (epoch-based
    runs) and ``iter``, stepped by the iteration; validation records are stepped
    by the epoch (``log_metric_by_epoch``, the default) or the iteration. A test's
    metrics go to ``<log_dir>/<timestamp>.json``. ``Exp name: <experiment_name>``
    is logged every ``interval_exp_name`` iterations and at each epoch's end."""

    def __init__(self, interval: int = 10, ignore_last: bool = True,
                 interval_exp_name: int = 1000, out_dir: str | None = None,
                 out_suffix: Any = (".json", ".log", ".py", "yaml"), keep_local: bool = True,
                 file_client_args: dict[str, Any] | None = None,
                 log_metric_by_epoch: bool = True, backend_args: dict[str, Any] | None = None
                 ) -> None:
        _refuse("LoggerHook", out_dir=out_dir, file_client_args=file_client_args,
                backend_args=backend_args)
        # MMEngine's log_metric_by_epoch only steps the validation records; the log lines
        # follow the run (Epoch(train) in an epoch-based run)
        super().__init__(interval=interval, by_epoch=True, ignore_last=ignore_last)
        self.interval_exp_name = positive_int(interval_exp_name, "interval_exp_name",
                                              owner="LoggerHook")
        self.out_suffix = _suffixes(out_suffix)
        self.keep_local = boolean(keep_local, "keep_local", owner="LoggerHook")
        self.log_metric_by_epoch = boolean(log_metric_by_epoch, "log_metric_by_epoch",
                                           owner="LoggerHook")

    def after_train_iter(self, runner: Any, batch_idx: int, data_batch: Any = None,
                         outputs: dict[str, Any] | None = None) -> None:
        if runner.is_main_process and self._exp_name_due(runner, batch_idx):
            log_queued(runner.logger, logging.INFO, f"Exp name: {runner.experiment_name}")
        super().after_train_iter(runner, batch_idx, data_batch, outputs)

    def _exp_name_due(self, runner: Any, batch_idx: int) -> bool:
        """MMEngine's rule: every ``interval_exp_name`` iterations and at an epoch's end."""
        if (runner.iter + 1) % self.interval_exp_name == 0:
            return True
        return bool(runner.by_epoch) and batch_idx + 1 == epoch_length(runner)

    def _write(self, runner: Any, record: dict[str, Any]) -> None:
        super()._write(runner, record)
        if not runner.is_main_process:
            return
        mode = record.get("mode", "train")
        json_log = f"{runner.timestamp}.json"
        scalars = _scalars(record)
        if mode == "test":
            _dump_json(Path(runner.log_dir) / json_log, scalars)
            return
        if mode == "train":
            if runner.by_epoch:
                scalars["epoch"] = record["epoch"]
            scalars["iter"] = record["iter"]
            step = int(record["iter"])
        elif self.log_metric_by_epoch:  # an iteration-based run stays at epoch 0 in MMEngine
            step = int(runner.epoch) if runner.by_epoch else 0
        else:
            step = int(runner.iter)
        runner.visualizer.add_scalars(scalars, step=step, file_path=json_log)


def _suffixes(out_suffix: Any) -> Any:
    """``out_suffix`` checked as MMEngine does: a string or a sequence of strings."""
    if isinstance(out_suffix, str) or (
            isinstance(out_suffix, Sequence) and all(isinstance(s, str) for s in out_suffix)):
        return out_suffix
    raise ConfigError(f"LoggerHook out_suffix must be a string or a sequence of strings "
                      f"(e.g. ('.json', '.log')), got {out_suffix!r}")


def _scalars(record: dict[str, Any]) -> dict[str, Any]:
    """The record's numbers, without hookline's position keys."""
    return {k: v for k, v in record.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
            and k not in ("epoch", "iter")}


def _dump_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as one JSON object to ``path`` (MMEngine's test-metrics file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


class EarlyStoppingHook(_EarlyStoppingHook):
    """MMEngine's ``EarlyStoppingHook(monitor, rule=None, min_delta=0.1, strict=False,
    check_finite=True, patience=5, stopping_threshold=None)``; with ``strict=False`` a
    validation without ``monitor`` is skipped with a warning."""

    def __init__(self, monitor: str, rule: str | None = None, min_delta: float = 0.1,
                 strict: bool = False, check_finite: bool = True, patience: int = 5,
                 stopping_threshold: float | None = None) -> None:
        super().__init__(monitor, rule=rule, min_delta=min_delta, patience=patience,
                         check_finite=check_finite, stopping_threshold=stopping_threshold)
        self.strict = bool(strict)

    def after_val_epoch(self, runner: Any, metrics: dict[str, float] | None = None) -> None:
        names = set(metrics or {})
        if not self.strict and strip_val_prefix(self.monitor, names) not in names:
            warnings.warn(f"EarlyStoppingHook: {self.monitor!r} is not among the metrics "
                          f"{sorted(names)}; this validation is skipped", UserWarning, stacklevel=2)
            return
        super().after_val_epoch(runner, metrics)


__all__ = ["CheckpointHook", "EarlyStoppingHook", "LoggerHook"]
