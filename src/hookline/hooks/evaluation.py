"""EvalHook / DistEvalHook: validation on a dataloader of their own, for mmcv users.

The evaluation is the Runner's own validation loop (``before_val`` ...
``after_val_epoch(metrics)`` ... ``after_val``, metrics through
:class:`~hookline.engine.evaluator.Evaluator`, reduced over ranks), so its
metrics reach the ``after_val_epoch`` hooks (CheckpointHook's best,
EarlyStoppingHook, ReduceLROnPlateau), the message hub (``val/<name>``) and
the logs exactly as the built-in validation's do. While it runs,
``runner.epoch`` / ``runner.iter`` count the epoch or iteration just
finished, as they do during the built-in validation.

Example::

    >>> import torch
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> from hookline.hooks import EvalHook
    >>> val = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
    >>> hook = EvalHook(val, interval=2, metrics={"acc": "accuracy"}, save_best="acc")
    >>> hook.best.rule
    'greater'
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch.distributed as dist
from torch import nn

from hookline.core import ConfigError
from hookline.engine import distributed
from hookline.engine.checks import boolean, non_negative_int, positive_int
from hookline.engine.data import build_dataloader, loader_length
from hookline.engine.hook import Hook
from hookline.engine.loops import ValLoop
from hookline.engine.metrics import build_metrics
from hookline.engine.registries import DATASETS, HOOKS

from .checkpoint import BestCheckpoint, CheckpointHook

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


#: the BatchNorm layers whose running statistics DistEvalHook broadcasts (mmcv matches torch's
#: private ``_BatchNorm`` base; these public classes are its concrete BatchNorm layers, lazy ones
#: included once they have run)
_BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


@HOOKS.register()
class EvalHook(Hook):
    """Validates every ``interval`` epochs or iterations during training.

    Args:
        dataloader: a ``DataLoader`` or a config dict (``{"dataset": ..., "batch_size": ...}``);
            not shuffled, and sharded without repeats on several processes.
        interval: evaluate every ``interval`` epochs (``by_epoch``) or iterations.
        by_epoch: count epochs or iterations (an iteration-based run has no
            epochs: there ``by_epoch=True`` counts passes over the training data,
            a ``ConfigError`` when the train dataloader has no length).
        metrics: a dict of name -> metric like the Runner's ``metrics``; None
            uses ``runner.metrics``.
        save_best: keep the checkpoint with the best value of this metric
            (``"auto"``: the first metric), as :class:`CheckpointHook` does
            (same rules, file names and resumable files; in its ``out_dir``).
        rule: ``"greater"`` or ``"less"``; inferred from the metric name when None.
        start: first epoch/iteration to evaluate after; then every ``interval``.
            ``start=0`` (or a resumed run already past ``start``) also
            evaluates before training. None: every ``interval`` from the start.

    As in mmcv, evaluation runs at interval points only (not forced at the
    end). Give the Runner no ``val_dataloader`` to avoid validating twice.
    """

    priority = "LOW"

    def __init__(self, dataloader: Any, interval: int = 1, by_epoch: bool = True,
                 metrics: Mapping[str, Any] | None = None, save_best: str | None = None,
                 rule: str | None = None, start: int | None = None) -> None:
        if dataloader is None:
            raise ConfigError("EvalHook needs a dataloader (a DataLoader or a config dict)")
        positive_int(interval, "interval", owner="EvalHook")
        non_negative_int(start, "start", owner="EvalHook", allow_none=True)
        boolean(by_epoch, "by_epoch", owner="EvalHook")
        self.dataloader = dataloader
        self.interval = interval
        self.by_epoch = by_epoch
        self.metrics = build_metrics(metrics) if metrics is not None else None
        self.save_best = save_best
        self.best = BestCheckpoint(save_best, rule, owner=type(self).__name__) \
            if save_best is not None else None
        self.start = start
        self.last_evaluated: int = -1  # epoch or iteration count of the last evaluation
        self._loader: Any = None

    # -- setup -----------------------------------------------------------------------------
    def before_run(self, runner: Runner) -> None:
        if self._loader is None:
            self._loader = build_dataloader(
                self.dataloader, name=f"{type(self).__name__} dataloader", seed=runner.seed,
                rank=runner.rank, world_size=runner.world_size, logger=runner.logger,
                datasets_registry=DATASETS, shuffle_default=False, pad=False)

    def before_train(self, runner: Runner) -> None:
        self._epochs = self.by_epoch and runner.by_epoch
        self._unit = 1 if self._epochs or not self.by_epoch else self._pass_length(runner)
        if self.best is not None:
            self.best.resolve(list(self.metrics if self.metrics is not None else runner.metrics))
            self.best.tidy(runner, self._best_folder(runner))  # names from a resumed state
        done = self._done(runner, finished=True)
        if self.start is not None and self._due(done, before=True):
            self._evaluate(runner, bump=None)

    def _pass_length(self, runner: Runner) -> int:
        """Iterations per pass over the training data (``by_epoch`` in a ``max_iters`` run)."""
        length = loader_length(runner.train_dataloader)
        if length is None:
            raise ConfigError(
                f"{type(self).__name__}(by_epoch=True) in an iteration-based run (max_iters) "
                "evaluates every `interval` passes over the training data, but the train "
                "dataloader has no length (an IterableDataset without __len__): give "
                f"{type(self).__name__} by_epoch=False and an interval in iterations")
        return length

    # -- when ------------------------------------------------------------------------------
    def _done(self, runner: Runner, finished: bool = False) -> int:
        """Epochs (or iterations / unit) finished, counting the one ending now unless ``finished``."""
        extra = 0 if finished else 1
        if self._epochs:
            return runner.epoch + extra
        return runner.iter + extra

    def _due(self, done: int, before: bool = False) -> bool:
        if done == self.last_evaluated or done % self._unit:
            return False
        count, every = done // self._unit, self.interval
        if self.start is None:
            return count > 0 and count % every == 0
        return count >= self.start and (count - self.start) % every == 0 and (before or count > 0)

    def after_train_epoch(self, runner: Runner) -> None:
        if self._epochs and self._due(self._done(runner)):
            self._evaluate(runner, bump="epoch")

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        if not self._epochs and self._due(self._done(runner)):
            self._evaluate(runner, bump="iter")

    # -- evaluating ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _finished(self, runner: Runner, bump: str | None) -> Iterator[None]:
        """``runner.epoch``/``iter`` as the built-in validation sees them (the step just ended)."""
        if bump is None:
            yield
            return
        with runner.state.counting_current(bump):
            yield

    def _evaluate(self, runner: Runner, bump: str | None) -> dict[str, float]:
        self._before_evaluate(runner)
        loop = ValLoop(runner, self._loader, metrics=self.metrics)
        with self._finished(runner, bump):
            self.last_evaluated = self._done(runner, finished=True)
            metrics = loop.run()
            if self.best is not None:
                self.best.update(runner, metrics, self._best_folder(runner))
        return metrics

    def _before_evaluate(self, runner: Runner) -> None:
        """Hook for subclasses: runs before each evaluation."""

    @staticmethod
    def _best_folder(runner: Runner) -> Path:
        for hook in runner.hooks.hooks:
            if isinstance(hook, CheckpointHook) and hook.out_dir is not None:
                return hook.out_dir
        return runner.work_dir

    # -- state ----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        state: dict[str, Any] = {"last_evaluated": self.last_evaluated}
        if self.best is not None:
            state["best"] = self.best.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.last_evaluated = int(state.get("last_evaluated", -1))
        if self.best is not None and "best" in state:
            self.best.load_state_dict(state["best"])

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(interval={self.interval}, by_epoch={self.by_epoch}, "
                f"save_best={self.save_best!r}, start={self.start})")


@HOOKS.register()
class DistEvalHook(EvalHook):
    """mmcv's distributed evaluation hook: :class:`EvalHook` plus BatchNorm buffer broadcast.

    :class:`EvalHook` already evaluates correctly on several processes: each
    rank validates its shard and the metrics are computed over all of them
    (predictions all-gathered, sums all-reduced). ``gpu_collect`` and
    ``tmpdir`` are accepted for mmcv configs and have no effect.
    ``broadcast_bn_buffer=True`` copies rank 0's BatchNorm running statistics
    to every rank before each evaluation, as mmcv does.

    Example::

        >>> import torch
        >>> from torch.utils.data import DataLoader, TensorDataset
        >>> val = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))))
        >>> DistEvalHook(val, gpu_collect=True).broadcast_bn_buffer
        True
    """

    def __init__(self, dataloader: Any, interval: int = 1, by_epoch: bool = True,
                 metrics: Mapping[str, Any] | None = None, save_best: str | None = None,
                 rule: str | None = None, start: int | None = None, gpu_collect: bool = False,
                 tmpdir: str | None = None, broadcast_bn_buffer: bool = True) -> None:
        super().__init__(dataloader, interval=interval, by_epoch=by_epoch, metrics=metrics,
                         save_best=save_best, rule=rule, start=start)
        self.gpu_collect = gpu_collect
        self.tmpdir = tmpdir
        self.broadcast_bn_buffer = broadcast_bn_buffer

    def _before_evaluate(self, runner: Runner) -> None:
        if not self.broadcast_bn_buffer or runner.world_size <= 1:
            return
        for module in runner.model.modules():
            if isinstance(module, _BATCH_NORMS) and module.track_running_stats:
                for buffer in (module.running_mean, module.running_var):
                    if buffer is not None:
                        dist.broadcast(buffer, 0)
        distributed.barrier()
