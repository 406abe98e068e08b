"""EmptyCacheHook: give cached, unused CUDA memory back at epoch or iteration boundaries.

Example::

    >>> from hookline.hooks import EmptyCacheHook
    >>> EmptyCacheHook(after_epoch=True).triggered_stages()
    ['after_train_epoch', 'after_val_epoch', 'after_test_epoch']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from hookline.engine.checks import boolean
from hookline.engine.hook import GENERIC_STAGES, STAGES, Hook
from hookline.engine.registries import HOOKS

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


def empty_cuda_cache() -> bool:
    """``torch.cuda.empty_cache()`` when CUDA is initialised; returns whether it ran.

    Never initialises CUDA itself, so on CPU-only runs it is a no-op.
    """
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
        return True
    return False


@HOOKS.register()
class EmptyCacheHook(Hook):
    """Calls ``torch.cuda.empty_cache()`` before and/or after epochs or after
    iterations, in training, validation and test.

    This releases memory PyTorch's caching allocator holds but does not use,
    so other processes (or a memory-hungry evaluation) can have it; it does
    not lower the peak of this run and makes later allocations slower, so
    ``after_iter=True`` is rarely worth it. Without CUDA (or before CUDA is
    initialised) it does nothing.

    Args:
        before_epoch: empty the cache before every epoch.
        after_epoch: empty the cache after every epoch.
        after_iter: empty the cache after every iteration.

    Example::

        runner = Runner(model, ..., hooks=[EmptyCacheHook(after_epoch=True)])
    """

    priority = "NORMAL"

    def __init__(self, before_epoch: bool = False, after_epoch: bool = True,
                 after_iter: bool = False) -> None:
        self._before_epoch_on = boolean(before_epoch, "before_epoch", owner="EmptyCacheHook")
        self._after_epoch_on = boolean(after_epoch, "after_epoch", owner="EmptyCacheHook")
        self._after_iter_on = boolean(after_iter, "after_iter", owner="EmptyCacheHook")
        #: how many times the cache was emptied
        self.calls = 0

    def triggered_stages(self) -> list[str]:
        """Only the stages of the enabled options (so disabled ones cost nothing)."""
        wanted: set[str] = set()
        for generic, enabled in (("_before_epoch", self._before_epoch_on),
                                 ("_after_epoch", self._after_epoch_on),
                                 ("_after_iter", self._after_iter_on)):
            if enabled:
                wanted.update(GENERIC_STAGES[generic])
        return [s for s in STAGES if s in wanted]

    def _empty(self) -> None:
        if empty_cuda_cache():
            self.calls += 1

    def _before_epoch(self, runner: Runner, mode: str = "train") -> None:
        self._empty()

    def _after_epoch(self, runner: Runner, mode: str = "train") -> None:
        self._empty()

    def _after_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None, outputs: Any = None,
                    mode: str = "train") -> None:
        self._empty()

    def __repr__(self) -> str:
        return (f"EmptyCacheHook(before_epoch={self._before_epoch_on}, "
                f"after_epoch={self._after_epoch_on}, after_iter={self._after_iter_on})")
