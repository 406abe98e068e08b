"""mmcv 1.x's constructor signatures over hookline's built-in hooks.

``CheckpointHook``, ``SyncBuffersHook``, ``EvalHook`` and ``DistEvalHook``
take mmcv's arguments; what hookline cannot honour is a :class:`ConfigError`
naming it.

Example::

    >>> from hookline.compat.mmcv.runner import CheckpointHook
    >>> CheckpointHook(interval=2, max_keep_ckpts=3).max_keep_ckpts
    3
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from hookline.core import ConfigError
from hookline.hooks import CheckpointHook as _CheckpointHook
from hookline.hooks import DistEvalHook as _DistEvalHook
from hookline.hooks import EvalHook as _EvalHook
from hookline.hooks import SyncBuffersHook as _SyncBuffersHook


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


class SyncBuffersHook(_SyncBuffersHook):
    """mmcv's ``SyncBuffersHook(distributed=True)``: averages buffers over ranks."""

    def __init__(self, distributed: bool = True) -> None:
        super().__init__()
        self.distributed = distributed


class EvalHook(_EvalHook):
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


class DistEvalHook(_DistEvalHook):
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
