"""The mmcv view's checkpoint methods and ``runner.meta`` in checkpoints.

mmcv's runner saved ``runner.meta`` as each checkpoint's ``meta`` and took
it back on ``resume``; hooks keep messages there (``hook_msgs``: CheckpointHook's
``last_ckpt``, EvalHook's ``best_score`` and ``best_ckpt``). The view does
the same over hookline's checkpoints: at ``before_save_checkpoint`` its
``meta`` joins the checkpoint's (``hook_msgs`` as it is then; hookline's own
keys such as ``epoch`` and ``iter`` keep their values), and a checkpoint that
resumes the run gives ``meta`` back (merged into ``hook_msgs``). A load is a
resume when the view's ``resume()`` made it, or, for a load the Runner made
(``Runner(resume=...)``, ``runner.resume`` from a hookline hook), when the run
stands at the checkpoint's position at the next stage; loading weights moves
nothing, so ``runner.meta`` stays as it was, as in mmcv.

Example::

    >>> import torch
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> from hookline import Runner
    >>> from hookline.compat.mmcv.runner.runner_view import runner_view
    >>> data = TensorDataset(torch.randn(8, 2), torch.randint(0, 2, (8,)))
    >>> runner = Runner(torch.nn.Linear(2, 2), optimizer={"type": "SGD", "lr": 0.1},
    ...                 loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1, work_dir=None,
    ...                 train_dataloader=DataLoader(data, batch_size=4), default_hooks={})
    >>> view = runner_view(runner)
    >>> view.meta["hook_msgs"]["note"] = "kept"
    >>> checkpoint = {"meta": {"epoch": 1, "iter": 2}}
    >>> view.store_meta(checkpoint); checkpoint["meta"]
    {'epoch': 1, 'iter': 2, 'hook_msgs': {'note': 'kept'}}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError
from hookline.engine.checkpoint import make_meta

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

#: the checkpoint ``meta`` keys hookline writes: ``runner.meta`` and a hook's ``meta=`` do not
#: replace them (mmcv's own ``epoch`` and ``iter`` win over them there too)
HOOKLINE_META = frozenset(make_meta(0, 0, batch=0, val_pending=False, stop_training=False,
                                    seed=0, by_epoch=True, config=None))


class MmcvCheckpoints:
    """``save_checkpoint`` / ``load_checkpoint`` / ``resume`` with mmcv's signatures, and
    ``runner.meta`` in checkpoints (mixed into the view; see the module docstring)."""

    meta: dict[str, Any]
    _loaded_meta: dict[str, Any] | None

    if TYPE_CHECKING:
        @property
        def hookline_runner(self) -> Runner: ...  # the view's

    def save_checkpoint(self, out_dir: str | Path, filename_tmpl: str | None = None,
                        save_optimizer: bool = True, meta: dict[str, Any] | None = None,
                        create_symlink: bool = True) -> Path:
        """mmcv's signature: ``out_dir/filename_tmpl.format(epoch + 1)`` (or ``iter + 1``);
        the ``latest`` pointer plays mmcv's ``latest.pth`` symlink. ``meta`` joins the
        checkpoint's ``meta`` with ``runner.meta`` (which wins, as in mmcv); like mmcv,
        this does not set ``hook_msgs['last_ckpt']`` (CheckpointHook does)."""
        if meta is not None and not isinstance(meta, dict):
            raise ConfigError(f"save_checkpoint: meta must be a dict or None (mmcv raises a "
                              f"TypeError), got {type(meta).__name__}")
        runner = self.hookline_runner
        if filename_tmpl is None:
            filename_tmpl = "epoch_{}.pth" if runner.by_epoch else "iter_{}.pth"
        count = runner.epoch + 1 if runner.by_epoch else runner.iter + 1
        extra = {k: v for k, v in (meta or {}).items() if k not in HOOKLINE_META}
        return runner.save_checkpoint(Path(out_dir) / filename_tmpl.format(count),
                                      save_optimizer=save_optimizer, meta=extra or None)

    def load_checkpoint(self, filename: str | Path, map_location: Any = "cpu",
                        strict: bool = False, revise_keys: Any = None) -> dict[str, Any]:
        """Load the weights of ``filename`` (hookline's loader, ``weights_only``); as in
        mmcv, ``strict`` and ``revise_keys`` (default: strip ``module.``) reach the loader
        and ``runner.meta`` stays as it is."""
        keys = [(r"^module\.", "")] if revise_keys is None else revise_keys
        try:
            return self.hookline_runner.load_checkpoint(filename, map_location, strict, keys)
        finally:
            object.__setattr__(self, "_loaded_meta", None)

    def resume(self, checkpoint: str | Path, resume_optimizer: bool = True,
               map_location: Any = "default") -> dict[str, Any]:
        """Restore the whole run from ``checkpoint``, ``runner.meta`` (``hook_msgs``) too."""
        loaded = self.hookline_runner.load_checkpoint(checkpoint, resume=True)
        object.__setattr__(self, "_loaded_meta", None)
        self._restore_meta(loaded.get("meta"))
        return loaded

    # -- runner.meta in checkpoints ---------------------------------------------------------
    def _checkpoint_stage(self, stage: str, checkpoint: Any) -> None:
        if stage == "before_save_checkpoint":
            self.store_meta(checkpoint)
        else:
            self.note_loaded(checkpoint)

    def store_meta(self, checkpoint: Any) -> None:
        """Put ``runner.meta`` into ``checkpoint['meta']`` (mmcv saves it as the checkpoint's
        meta): ``hook_msgs`` as it is now, other keys where hookline wrote none."""
        meta = checkpoint.get("meta") if isinstance(checkpoint, dict) else None
        if not isinstance(meta, dict):
            return
        for key, value in self.meta.items():
            if key == "hook_msgs" and isinstance(value, Mapping):
                meta["hook_msgs"] = dict(value)
            elif key not in HOOKLINE_META:
                meta.setdefault(key, value)

    def note_loaded(self, checkpoint: Any) -> None:
        """A checkpoint was loaded (``after_load_checkpoint``): its ``meta`` becomes
        ``runner.meta``'s if the load turns out to be a resume (:meth:`settle_meta`)."""
        meta = checkpoint.get("meta") if isinstance(checkpoint, dict) else None
        if isinstance(meta, dict):
            object.__setattr__(self, "_loaded_meta", meta)

    def settle_meta(self) -> None:
        """After a load: restore ``runner.meta`` from the checkpoint if it resumed the run
        (the run stands at the checkpoint's position; loading weights moves nothing)."""
        saved = self._loaded_meta
        object.__setattr__(self, "_loaded_meta", None)
        runner = self.hookline_runner
        if saved is not None and (saved.get("epoch"), saved.get("iter")) == (runner.epoch,
                                                                             runner.iter):
            self._restore_meta(saved)

    def _restore_meta(self, saved: Any) -> None:
        """mmcv's resume: ``runner.meta`` is the checkpoint's (``hook_msgs`` merged)."""
        if not isinstance(saved, Mapping):
            return
        messages = self.meta.setdefault("hook_msgs", {})
        self.meta.update({k: v for k, v in saved.items() if k != "hook_msgs"})
        if isinstance(saved.get("hook_msgs"), Mapping):
            messages.update(saved["hook_msgs"])


__all__ = ["HOOKLINE_META", "MmcvCheckpoints"]
