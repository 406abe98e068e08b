"""CheckInvalidLossHook: stop training at a NaN or infinite loss, naming the iteration.

The check stays on the device: every iteration copies its loss into a device
buffer (one small copy, no sync); every ``interval`` iterations the host
reads ``isfinite(buffer).all()`` once, and only when that is false finds the
first bad iteration in the buffer.

Example::

    >>> from hookline.hooks import CheckInvalidLossHook
    >>> CheckInvalidLossHook(interval=50).triggered_stages()
    ['before_train', 'after_train_iter', 'before_save_checkpoint', 'after_train']
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import HookHandle
from hookline.engine.checks import positive_int
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


class InvalidLossError(RuntimeError):
    """The training loss was NaN or infinite.

    Attributes:
        iteration: the first bad iteration, counted from 1 (``runner.iter``
            was ``iteration - 1`` while it ran).
        value: the bad loss as a float (``nan``, ``inf`` or ``-inf``).
    """

    def __init__(self, iteration: int, value: float, interval: int) -> None:
        self.iteration = iteration
        self.value = value
        self.interval = interval
        late = ("" if interval == 1 else
                f"; the loss is read every {interval} iterations, so up to {interval - 1} "
                "more iterations ran after it and the weights may hold NaN/Inf")
        super().__init__(
            f"the training loss is {value} at iteration {iteration} (runner.iter == "
            f"{iteration - 1}){late}. Check that iteration's batch for NaN/Inf values; if "
            "the data is sound, train again (or resume from a checkpoint saved before "
            f"iteration {iteration}) with a lower learning rate or gradient clipping "
            "(optim_wrapper={'optimizer': {...}, 'clip_grad': {'max_norm': 1.0}})")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across processes
        return (type(self), (self.iteration, self.value, self.interval))


@HOOKS.register()
class CheckInvalidLossHook(Hook):
    """Raises :class:`InvalidLossError` when the training loss is NaN or infinite.

    Args:
        interval: read the kept losses every ``interval`` iterations (and at
            the last iteration, at the end of training and before any
            checkpoint is written, so no checkpoint is saved after a bad
            loss). ``interval=1`` stops at the bad iteration itself; larger
            values save one host-device sync per iteration on GPUs. Between
            reads each iteration costs one device copy of its loss (a
            buffer of up to ``interval`` values).

    It watches the loss on ``runner.optim_wrapper.before_update``, which
    fires before the backward: when the losses are read at the bad
    iteration, training stops before that loss is back-propagated into the
    weights (MMEngine's hook checks after the step). A model that runs its
    own update with several optimizers is checked in ``after_train_iter``.
    The error is reported as a :class:`hookline.core.HookError` whose
    ``__cause__`` is the :class:`InvalidLossError`.

    Example::

        runner = Runner(model, ..., hooks=[CheckInvalidLossHook(interval=10)])
    """

    priority = "HIGH"

    def __init__(self, interval: int = 1) -> None:
        self.interval: int = positive_int(interval, "interval", owner="CheckInvalidLossHook")
        self._losses: torch.Tensor | None = None  # the unread losses, on the loss's device
        self._count = 0                           # how many of them are unread
        self._first_iter = 0                      # runner.iter of the first unread one
        self._runner: Runner | None = None
        self._handle: HookHandle | None = None    # on optim_wrapper.before_update

    def before_train(self, runner: Runner) -> None:
        self._count = 0
        self._runner = runner
        if self._handle is not None:  # a run of this Runner that ended with an error
            self._handle.remove()
        event = getattr(runner.optim_wrapper, "before_update", None)
        self._handle = event.register(self._before_update) if event is not None else None

    def _before_update(self, loss: Any) -> None:
        runner = self._runner
        assert runner is not None  # set in before_train, which registers this callback
        self._watch(runner, loss)

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        if self._handle is None:  # not attached to an optimizer wrapper
            self._watch(runner, None if outputs is None else outputs.get("loss"))

    def _watch(self, runner: Runner, loss: Any) -> None:
        if isinstance(loss, torch.Tensor):
            self._keep(runner, loss.detach())
        elif isinstance(loss, (int, float)) and not math.isfinite(loss):
            raise InvalidLossError(runner.iter + 1, float(loss), 1)
        if self._count and (self.every_n_train_iters(runner, self.interval)
                            or self.is_last_train_iter(runner)):
            self.check()

    def _keep(self, runner: Runner, loss: torch.Tensor) -> None:
        # a sum is NaN or infinite when any element is: one value per iteration
        value = loss.reshape(()) if loss.numel() == 1 else loss.sum()
        buffer = self._losses
        if self._count == 0:
            self._first_iter = runner.iter
            if buffer is None or buffer.device != value.device or buffer.dtype != value.dtype:
                buffer = torch.empty(min(self.interval, 256), dtype=value.dtype,
                                     device=value.device)
        else:
            assert buffer is not None  # it holds the unread losses
            if self._count == len(buffer):  # grows only as far as iterations actually run
                buffer = torch.cat([buffer, torch.empty_like(buffer)])
        buffer[self._count] = value  # one device copy; no sync
        self._losses = buffer
        self._count += 1

    def check(self) -> None:
        """Read the unread losses (one sync); raise :class:`InvalidLossError` if one was bad."""
        if not self._count or self._losses is None:  # a count > 0 has its losses kept
            return
        losses, self._count = self._losses[:self._count], 0
        finite = torch.isfinite(losses)
        if bool(finite.all()):
            return
        index = int(torch.logical_not(finite).nonzero()[0, 0])
        raise InvalidLossError(self._first_iter + index + 1, float(losses[index]),
                               self.interval)

    def before_save_checkpoint(self, runner: Runner, checkpoint: dict) -> None:
        self.check()

    def after_train(self, runner: Runner) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        self.check()

    def __repr__(self) -> str:
        return f"CheckInvalidLossHook(interval={self.interval})"
