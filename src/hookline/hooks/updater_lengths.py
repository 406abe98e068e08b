"""The lengths mmcv's updater hooks (``LrUpdaterHook``, ``MomentumUpdaterHook``) need from a run.

A warm-up given in epochs needs the batches per epoch, and a policy that
anneals over the run (``cosine``, ``linear``, ``poly``, ``onecycle``) needs
the run's length in its unit. With a train dataloader without a length (an
``IterableDataset``) the batches per epoch are unknown before training, and
so are the iterations of a ``max_epochs`` run: these helpers raise one
``ConfigError`` naming the hook, the option and the fix.

Example::

    >>> import torch
    >>> from torch.utils.data import DataLoader
    >>> from hookline import Runner
    >>> runner = Runner(torch.nn.Linear(2, 1), max_epochs=3, work_dir=None,
    ...                 train_dataloader=DataLoader(range(10), batch_size=5))
    >>> run_length(runner, by_epoch=False, kind="LrUpdaterHook")
    6
    >>> warmup_iterations(runner, 2, warmup_by_epoch=True, kind="LrUpdaterHook")
    4
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookline.core import ConfigError
from hookline.engine.data import loader_length

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["needs_run_length", "run_length", "warmup_iterations"]

_NO_LENGTH = "the train dataloader has no length (an IterableDataset without __len__)"


def run_length(runner: Runner, *, by_epoch: bool, kind: str) -> int | None:
    """The run's length in the policy's unit: epochs (``by_epoch``) or iterations; None
    when not known (no training loop, or a ``max_epochs`` run over a loader without a length)."""
    if by_epoch and not runner.by_epoch:
        raise ConfigError(f"{kind}(by_epoch=True) needs an epoch-based run (max_epochs); this "
                          "run has max_iters: pass by_epoch=False")
    return runner.max_epochs if by_epoch else runner.max_iters


def needs_run_length(runner: Runner, kind: str, policy: str) -> ConfigError:
    """The error for a policy that anneals over the run when :func:`run_length` is None."""
    if runner.train_loop is not None and loader_length(runner.train_dataloader) is None:
        return ConfigError(
            f"{kind} policy {policy!r} by iteration (by_epoch=False) needs the run's iterations, "
            f"unknown before training here: {_NO_LENGTH} and the run has max_epochs; give "
            f"{kind} by_epoch=True, or train with max_iters")
    return ConfigError(f"{kind} policy {policy!r} needs the run's length: give the Runner "
                       "max_epochs or max_iters")


def warmup_iterations(runner: Runner, warmup_iters: int, *, warmup_by_epoch: bool,
                      kind: str) -> int:
    """The warm-up's length in iterations (``warmup_iters`` epochs with ``warmup_by_epoch``)."""
    if not warmup_by_epoch:
        return warmup_iters
    length = loader_length(runner.train_dataloader)
    if length is None:
        raise ConfigError(f"{kind}(warmup_by_epoch=True) needs the batches per epoch, but "
                          f"{_NO_LENGTH}: give warmup_iters in iterations "
                          "(warmup_by_epoch=False)")
    return warmup_iters * length
