"""mmcv 1.x's constructor signatures over hookline's built-in hooks.

``CheckpointHook``, ``SyncBuffersHook``, ``EvalHook`` and ``DistEvalHook``
take mmcv's arguments; what hookline cannot honour is a :class:`ConfigError`
naming it. As in mmcv, ``CheckpointHook`` records ``runner.meta['hook_msgs']
['last_ckpt']`` and writes into ``out_dir/<work_dir's name>`` (mmcv >= 1.3.16),
and ``EvalHook(save_best=...)`` records ``best_score`` / ``best_ckpt`` there
(and keeps ``best_ckpt_path``, ``key_indicator``), puts its results into
``runner.log_buffer`` and is ``runner.data_loader`` while it validates.

Example::

    >>> from hookline.compat.mmcv.runner import CheckpointHook
    >>> CheckpointHook(interval=2, max_keep_ckpts=3).max_keep_ckpts
    3
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hookline.core import ConfigError
from hookline.hooks import CheckpointHook as _CheckpointHook
from hookline.hooks import DistEvalHook as _DistEvalHook
from hookline.hooks import EvalHook as _EvalHook
from hookline.hooks import SyncBuffersHook as _SyncBuffersHook

from ..runner_view import runner_view


def _refuse(owner: str, **options: Any) -> None:
    given = [f"{name}={value!r}" for name, value in options.items() if value]
    if given:
        raise ConfigError(f"{owner}: {', '.join(given)} is not supported by hookline "
                          "(see docs/porting.md)")


class CheckpointHook(_CheckpointHook):
    """mmcv's ``CheckpointHook(interval=-1, by_epoch=True, save_optimizer=True, out_dir=None,
    max_keep_ckpts=-1, save_last=True, sync_buffer=False, file_client_args=None, **kwargs)``;
    ``interval=-1`` saves only the last checkpoint, ``kwargs`` may hold ``filename_tmpl``."""

    def __init__(self, interval: int = -1, by_epoch: bool = True, save_optimizer: bool = True,
                 out_dir: str | None = None, max_keep_ckpts: int = -1, save_last: bool = True,
                 sync_buffer: bool = False, file_client_args: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        _refuse("CheckpointHook", file_client_args=file_client_args)
        if out_dir is not None and "://" in str(out_dir):
            raise ConfigError(f"CheckpointHook out_dir={out_dir!r}: remote storage is not "
                              "supported by hookline; give a local folder (see docs/porting.md)")
        if sync_buffer:
            raise ConfigError("CheckpointHook sync_buffer=True: add SyncBuffersHook instead (it "
                              "averages the buffers before each epoch's checkpoint is written)")
        unknown = sorted(set(kwargs) - {"filename_tmpl"})
        if unknown:
            raise ConfigError(f"CheckpointHook got unexpected argument(s) {unknown}; mmcv passes "
                              "only filename_tmpl through")
        if isinstance(interval, int) and not isinstance(interval, bool) and interval <= 0:
            interval = sys.maxsize
        super().__init__(interval=interval, by_epoch=by_epoch, save_optimizer=save_optimizer,
                         out_dir=out_dir, max_keep_ckpts=max_keep_ckpts, save_last=save_last,
                         filename_tmpl=kwargs.get("filename_tmpl"))

    def before_run(self, runner: Any) -> None:
        """mmcv's ``out_dir`` is ``runner.work_dir`` when not given (the native hook
        joins a given one with the work dir's name, as mmcv does)."""
        super().before_run(runner)
        if self.out_dir is None:
            self.out_dir = Path(runner.work_dir)

    def before_train(self, runner: Any) -> None:
        runner_view(runner).settle_meta()  # a resumed run's runner.meta
        super().before_train(runner)

    def _write_periodic(self, runner: Any, name: str, iteration: int, stale: list[str]) -> None:
        super()._write_periodic(runner, name, iteration, stale)
        runner_view(runner).meta.setdefault("hook_msgs", {})["last_ckpt"] = \
            str(self._folder(runner) / name)

    def before_save_checkpoint(self, runner: Any, checkpoint: dict[str, Any]) -> None:
        runner_view(runner).store_meta(checkpoint)  # runner.meta is the checkpoint's, in mmcv

    def after_load_checkpoint(self, runner: Any, checkpoint: dict[str, Any]) -> None:
        runner_view(runner).note_loaded(checkpoint)


class SyncBuffersHook(_SyncBuffersHook):
    """mmcv's ``SyncBuffersHook(distributed=True)``: averages buffers over ranks."""

    def __init__(self, distributed: bool = True) -> None:
        super().__init__()
        self.distributed = distributed


class _MmcvEval(_EvalHook):
    """What mmcv's EvalHook adds: ``runner.meta['hook_msgs']`` best entries, ``best_ckpt_path``,
    ``key_indicator``, the results in ``runner.log_buffer``, its loader as ``data_loader``."""

    #: the best checkpoint's path (mmcv's attribute), None before the first best
    best_ckpt_path: str | None = None

    @property
    def key_indicator(self) -> str | None:
        """The metric ``save_best`` follows (``"auto"`` until it is known), as in mmcv."""
        return None if self.best is None else (self.best.key or "auto")

    def before_run(self, runner: Any) -> None:
        super().before_run(runner)
        if self.best is not None:  # mmcv: from runner.meta, for a resumed run
            self.best_ckpt_path = runner_view(runner).meta.get("hook_msgs", {}).get("best_ckpt")

    def before_train(self, runner: Any) -> None:
        runner_view(runner).settle_meta()  # a resumed run's runner.meta
        super().before_train(runner)

    def _evaluate(self, runner: Any, bump: str | None) -> dict[str, float]:
        view = runner_view(runner)
        with view.evaluating(self._loader):
            metrics = super()._evaluate(runner, bump)
        if metrics:
            view.feed_metrics(metrics, unless_fed=True)  # mmcv's EvalHook wrote log_buffer
        self._note_best(runner)
        return metrics

    def _note_best(self, runner: Any) -> None:
        if self.best is None or self.best.best_ckpt is None:
            return
        self.best_ckpt_path = str(self._best_folder(runner) / self.best.best_ckpt)
        messages = runner_view(runner).meta.setdefault("hook_msgs", {})
        messages["best_score"] = self.best.best_score
        messages["best_ckpt"] = self.best_ckpt_path

    def before_save_checkpoint(self, runner: Any, checkpoint: dict[str, Any]) -> None:
        self._note_best(runner)  # a new best's own file holds it, as mmcv wrote it first
        runner_view(runner).store_meta(checkpoint)

    def after_load_checkpoint(self, runner: Any, checkpoint: dict[str, Any]) -> None:
        runner_view(runner).note_loaded(checkpoint)


class EvalHook(_MmcvEval):
    """mmcv's ``EvalHook(dataloader, start=None, interval=1, by_epoch=True, save_best=None,
    rule=None, test_fn=None, greater_keys=None, less_keys=None, out_dir=None,
    file_client_args=None, **eval_kwargs)``: the Runner's metrics on ``dataloader``
    (hookline evaluates with ``metrics``, not ``dataset.evaluate``)."""

    def __init__(self, dataloader: Any, start: int | None = None, interval: int = 1,
                 by_epoch: bool = True, save_best: str | None = None, rule: str | None = None,
                 test_fn: Any = None, greater_keys: Sequence[str] | None = None,
                 less_keys: Sequence[str] | None = None, out_dir: str | None = None,
                 file_client_args: dict[str, Any] | None = None, **eval_kwargs: Any) -> None:
        _refuse(type(self).__name__, test_fn=test_fn, greater_keys=greater_keys,
                less_keys=less_keys, out_dir=out_dir, file_client_args=file_client_args,
                **eval_kwargs)
        super().__init__(dataloader, interval=interval, by_epoch=by_epoch, save_best=save_best,
                         rule=rule, start=start)


class DistEvalHook(_MmcvEval, _DistEvalHook):
    """mmcv's ``DistEvalHook``: :class:`EvalHook` plus ``broadcast_bn_buffer``, ``tmpdir``
    and ``gpu_collect``."""

    def __init__(self, dataloader: Any, start: int | None = None, interval: int = 1,
                 by_epoch: bool = True, tmpdir: str | None = None, gpu_collect: bool = False,
                 broadcast_bn_buffer: bool = True, save_best: str | None = None,
                 rule: str | None = None, test_fn: Any = None, **eval_kwargs: Any) -> None:
        _refuse("DistEvalHook", test_fn=test_fn, **eval_kwargs)
        super().__init__(dataloader, interval=interval, by_epoch=by_epoch, save_best=save_best,
                         rule=rule, start=start, gpu_collect=gpu_collect, tmpdir=tmpdir,
                         broadcast_bn_buffer=broadcast_bn_buffer)


__all__ = ["CheckpointHook", "DistEvalHook", "EvalHook", "SyncBuffersHook"]
