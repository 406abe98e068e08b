"""What every logging hook shares: when a log step comes, and the scalars it reports.

:func:`log_window` says whether a training iteration is a log step and over
how many iterations to average; :func:`scalar_windows` takes the message
hub's recent values at that step, unread, and :func:`collect_scalars`
averages them; :func:`current_lrs`, :func:`total_train_iters` and
:func:`epoch_length` give the rest of a log line. Used by
:class:`~hookline.hooks.LoggerHook`, :class:`~hookline.hooks.TensorboardLoggerHook`
and the inspect hooks.

Example::

    >>> from types import SimpleNamespace
    >>> from hookline.engine.message_hub import MessageHub
    >>> hub = MessageHub()
    >>> hub.update_many("train", {"time": 0.5, "loss": 2.0})
    >>> list(scalar_windows(SimpleNamespace(message_hub=hub), "train"))
    ['loss', 'time']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookline.engine.data import loader_length
from hookline.engine.history_buffer import ScalarWindow

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

#: the columns a training line shows after the others, in this order
LAST_COLUMNS = ("time", "data_time")


def log_window(runner: Runner, batch_idx: int, interval: int, by_epoch: bool = True,
               ignore_last: bool = False) -> int | None:
    """How many iterations to average over if this training iteration is a log step, else None.

    A log step is every ``interval``-th iteration: of the epoch (``by_epoch``
    in an epoch-based run, plus the last, shorter group of each epoch unless
    ``ignore_last``; an epoch no longer than ``interval`` logs its end even then,
    as in MMEngine) or of the whole run (plus the run's last iteration).
    Called from ``after_train_iter``, before ``runner.iter`` advances.
    """
    per_epoch = by_epoch and runner.by_epoch
    done = batch_idx + 1 if per_epoch else runner.iter + 1
    if done % interval == 0:
        return interval
    last = epoch_length(runner) if per_epoch else total_train_iters(runner)
    if done != last:
        return None
    if ignore_last and not (per_epoch and last <= interval):
        return None  # (an epoch no longer than the interval still logs its end, as in MMEngine)
    return (done - 1) % interval + 1


def _order(name: str) -> tuple[int, str]:
    if name == "loss":
        return (0, "")
    if name in LAST_COLUMNS:
        return (3, str(LAST_COLUMNS.index(name)))
    return (1 if "loss" in name else 2, "")


def scalar_windows(runner: Runner, mode: str = "train", count: int | None = None
                   ) -> dict[str, ScalarWindow]:
    """The last ``count`` records of each ``{mode}/<name>`` key of ``runner.message_hub``,
    taken now and unread (:class:`~hookline.engine.history_buffer.ScalarWindow`).

    Keys come back without the prefix, ordered ``loss`` first, then other
    losses, then everything else, then ``time`` and ``data_time``. Taking
    them costs no host-device sync: averaging them (``window.mean()``) does,
    so LoggerHook averages on its writer thread.
    """
    windows = runner.message_hub.windows(f"{mode}/", count)
    return {name: windows[name] for name in sorted(windows, key=_order)}


def collect_scalars(runner: Runner, mode: str = "train", count: int | None = None) -> dict[str, float]:
    """The smoothed scalars of one log step: the mean of each of :func:`scalar_windows`.
    Reading a device tensor is a host sync, so call this at log steps only.

    Example::

        >>> from types import SimpleNamespace
        >>> from hookline.engine.message_hub import MessageHub
        >>> hub = MessageHub()
        >>> for t, loss in ((0.5, 2.0), (0.25, 1.0)):
        ...     hub.update_many("train", {"time": t, "acc": 0.5, "loss": loss})
        >>> collect_scalars(SimpleNamespace(message_hub=hub), "train", count=2)
        {'loss': 1.5, 'acc': 0.5, 'time': 0.375}
    """
    return {name: window.mean() for name, window in scalar_windows(runner, mode, count).items()}


def current_lrs(runner: Runner) -> dict[str, float]:
    """``{"lr": ...}`` of the first parameter group, plus ``lr_groupN`` for groups that differ;
    with several optimizers (an ``OptimWrapperDict``), MMEngine's keys: the first group's rate
    of each, ``{"generator.lr": ..., "discriminator.lr": ...}``. Reads Python numbers only.

    Example::

        >>> import torch
        >>> from types import SimpleNamespace
        >>> from hookline.engine import OptimWrapper, OptimWrapperDict
        >>> def sgd(lr):
        ...     return OptimWrapper(torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=lr))
        >>> current_lrs(SimpleNamespace(optimizer=None,
        ...                             optim_wrapper=OptimWrapperDict(g=sgd(0.1), d=sgd(0.2))))
        {'g.lr': 0.1, 'd.lr': 0.2}
    """
    optimizer = getattr(runner, "optimizer", None)
    if optimizer is None:
        wrapper = getattr(runner, "optim_wrapper", None)
        get_lr = getattr(wrapper, "get_lr", None)
        if get_lr is None:
            return {}
        return {name: float(values[0]) for name, values in get_lr().items() if values}
    groups = optimizer.param_groups
    lrs = {"lr": float(groups[0]["lr"])}
    for i, group in enumerate(groups[1:], 1):
        if float(group["lr"]) != lrs["lr"]:
            lrs[f"lr_group{i}"] = float(group["lr"])
    return lrs


def is_lr_key(name: str) -> bool:
    """Whether ``name`` is one of :func:`current_lrs`' keys (``lr``, ``lr_group1``,
    ``generator.lr``), which a log line shows first.

    Example::

        >>> [is_lr_key(k) for k in ("lr", "lr_group2", "generator.lr", "loss", "iter")]
        [True, True, True, False, False]
    """
    return name.startswith("lr") or name.endswith(".lr")


def total_train_iters(runner: Runner) -> int | None:
    """Training iterations of the whole run (None: not known yet, in a run of ``max_epochs``
    over a train dataloader without a length; see docs/engine.md)."""
    max_iters = runner.max_iters
    return None if max_iters is None else int(max_iters)


def epoch_length(runner: Runner) -> int | None:
    """Batches per training epoch (None: not known yet, a loader without a length)."""
    loop = runner.train_loop
    return loop.epoch_length if loop is not None else loader_length(runner.train_dataloader)
