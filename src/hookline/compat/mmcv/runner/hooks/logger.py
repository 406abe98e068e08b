"""``mmcv.runner.LoggerHook`` (the base of mmcv's logger hooks) and ``TextLoggerHook``.

A custom mmcv logger subclasses :class:`LoggerHook` and implements
``log(runner)``; it reads ``runner.log_buffer.output`` (the step outputs'
scalars, fed every iteration, averaged over ``interval``; validation metrics
after each validation) with mmcv's helpers (``get_mode``, ``get_epoch``,
``get_iter``, ``get_loggable_tags``, ``get_lr_tags``). ``TextLoggerHook`` is
hookline's text and JSON-lines logger under mmcv's arguments.

Example::

    >>> from hookline.compat.mmcv.runner import LoggerHook
    >>> class Collect(LoggerHook):
    ...     def log(self, runner):
    ...         pass
    >>> Collect(interval=5).interval
    5
"""

from __future__ import annotations

import numbers
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.hooks import LoggerHook as _NativeLoggerHook

from .hook import Hook


class LoggerHook(Hook):
    """mmcv 1.x's abstract logger hook: ``log(runner)`` is called every ``interval``
    iterations (and after each epoch and validation) once the log buffer is averaged."""

    priority: Any = "VERY_LOW"

    def __init__(self, interval: int = 10, ignore_last: bool = True, reset_flag: bool = False,
                 by_epoch: bool = True) -> None:
        self.interval = interval
        self.ignore_last = ignore_last
        self.reset_flag = reset_flag
        self.by_epoch = by_epoch

    def log(self, runner: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define log(runner)")

    @staticmethod
    def is_scalar(val: Any, include_np: bool = True, include_torch: bool = True) -> bool:
        if isinstance(val, numbers.Number):
            return True
        if include_np:
            import numpy as np  # noqa: PLC0415  (only for numpy values)

            if isinstance(val, np.ndarray) and val.ndim == 0:
                return True
        return include_torch and isinstance(val, torch.Tensor) and val.numel() == 1

    def get_mode(self, runner: Any) -> str:
        """``runner.mode``: hookline runs validation in val mode (mmcv's EvalHook ran it in
        train mode, and this method told the two apart by the missing ``time`` key)."""
        if runner.mode in ("train", "val", "test"):
            return str(runner.mode)
        raise ValueError(f"runner mode should be 'train', 'val' or 'test', got {runner.mode!r}")

    def get_epoch(self, runner: Any) -> int:
        return int(runner.epoch + 1 if runner.mode == "train" else runner.epoch)

    def get_iter(self, runner: Any, inner_iter: bool = False) -> int:
        return int(runner.inner_iter + 1 if self.by_epoch and inner_iter else runner.iter + 1)

    def get_lr_tags(self, runner: Any) -> dict[str, float]:
        lrs = runner.current_lr()
        if isinstance(lrs, dict):
            return {f"learning_rate/{name}": value[0] for name, value in lrs.items()}
        return {"learning_rate": lrs[0]}

    def get_momentum_tags(self, runner: Any) -> dict[str, float]:
        momenta = runner.current_momentum()
        if isinstance(momenta, dict):
            return {f"momentum/{name}": value[0] for name, value in momenta.items()}
        return {"momentum": momenta[0]}

    def get_loggable_tags(self, runner: Any, allow_scalar: bool = True, allow_text: bool = False,
                          add_mode: bool = True,
                          tags_to_skip: tuple[str, ...] = ("time", "data_time")) -> dict[str, Any]:
        tags: dict[str, Any] = {}
        for var, val in runner.log_buffer.output.items():
            if var in tags_to_skip:
                continue
            if self.is_scalar(val) and not allow_scalar:
                continue
            if isinstance(val, str) and not allow_text:
                continue
            tags[f"{self.get_mode(runner)}/{var}" if add_mode else var] = val
        tags.update(self.get_lr_tags(runner))
        tags.update(self.get_momentum_tags(runner))
        return tags

    def before_run(self, runner: Any) -> None:
        for hook in reversed(runner.hooks):
            if isinstance(hook, LoggerHook):
                hook.reset_flag = True
                break

    def before_epoch(self, runner: Any) -> None:
        runner.log_buffer.clear()

    def after_train_iter(self, runner: Any) -> None:
        due = (self.every_n_inner_iters(runner, self.interval) if self.by_epoch
               else self.every_n_iters(runner, self.interval))
        if due or (self.end_of_epoch(runner) and not self.ignore_last):
            runner.log_buffer.average(self.interval)
        if runner.log_buffer.ready:
            self.log(runner)
            if self.reset_flag:
                runner.log_buffer.clear_output()

    def after_train_epoch(self, runner: Any) -> None:
        if runner.log_buffer.ready:
            self.log(runner)
            if self.reset_flag:
                runner.log_buffer.clear_output()

    def after_val_epoch(self, runner: Any) -> None:
        runner.log_buffer.average()
        self.log(runner)
        if self.reset_flag:
            runner.log_buffer.clear_output()


class TextLoggerHook(_NativeLoggerHook):
    """mmcv's ``TextLoggerHook(by_epoch=True, interval=10, ignore_last=True,
    reset_flag=False, interval_exp_name=1000, out_dir=None, out_suffix=...,
    keep_local=True, file_client_args=None)``: hookline's log lines and ``metrics.jsonl``."""

    def __init__(self, by_epoch: bool = True, interval: int = 10, ignore_last: bool = True,
                 reset_flag: bool = False, interval_exp_name: int = 1000,
                 out_dir: str | None = None, out_suffix: Any = (".log.json", ".log", ".py"),
                 keep_local: bool = True, file_client_args: dict[str, Any] | None = None) -> None:
        if out_dir is not None or file_client_args is not None:
            raise ConfigError("TextLoggerHook: out_dir and file_client_args (copying logs to "
                              "other storage) are not supported by hookline; logs stay in work_dir")
        super().__init__(interval=interval, by_epoch=by_epoch, ignore_last=ignore_last)
        self.reset_flag = reset_flag
        self.interval_exp_name = interval_exp_name


__all__ = ["LoggerHook", "TextLoggerHook"]
