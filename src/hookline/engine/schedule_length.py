"""Scheduler lengths that follow the run: ``T_max`` and friends filled in from ``max_epochs``.

A scheduler config may leave its length to the run (MMEngine's idiom: an
``end`` left out is the end of the train loop). Then the Runner fills it in
with the number of times :class:`~hookline.hooks.ParamSchedulerHook` will
step that scheduler over the whole run, so ``--set max_epochs=60`` anneals
over 60 epochs instead of cycling back up after the config's 10:

==================  ===============  =====================================================
scheduler           key              the run's length when
==================  ===============  =====================================================
CosineAnnealingLR   ``T_max``        left out, or ``run``
OneCycleLR          ``total_steps``  left out (with no ``epochs``), or ``run``
LinearLR            ``total_iters``  ``run`` (left out, it keeps torch's default, 5)
PolynomialLR        ``total_iters``  ``run`` (left out, it keeps torch's default, 5)
a class's own       its              left out, or ``run`` (MMEngine's schedulers: ``end``,
``run_length_key``  ``run_length_    in epochs or iterations, as MMEngine's Runner sets it)
                    key``
==================  ===============  =====================================================

"The run's length" counts scheduler steps: epochs for a ``by_epoch``
scheduler (``max_iters // len(train_dataloader)`` in an iteration-based
run), optimizer steps for a per-iteration one (``max_epochs`` x batches
per epoch, or ``max_iters``, divided by ``accumulative_counts`` rounding
up). Inside ``SequentialLR`` a child's run length is its stretch between
the ``milestones`` (the last child: from the last milestone to the end).

:func:`check_run_length` looks at the built schedulers: a fixed
CosineAnnealingLR ``T_max`` shorter than the run is one warning (the LR
cycles back up after it), a OneCycleLR ``total_steps`` shorter than the run
a :class:`ConfigError` (torch raises once it steps past it).

A train dataloader without a length (an ``IterableDataset``) leaves one of
the two counts unknown (None): a per-iteration length in an epoch-based run,
the passes over the data in an iteration-based one. A length that should
follow an unknown count, and a ``by_epoch`` scheduler in an iteration-based
run over such a loader, are a :class:`ConfigError` naming the fix.

Example::

    >>> cfg = {"type": "CosineAnnealingLR", "eta_min": 1e-4, "by_epoch": False}
    >>> fill_run_lengths(cfg, SchedulerSteps(per_epoch=10, per_iter=450))
    {'type': 'CosineAnnealingLR', 'eta_min': 0.0001, 'by_epoch': False, 'T_max': 450}
    >>> fill_run_lengths({"type": "LinearLR", "total_iters": "run"}, SchedulerSteps(10, 450))
    {'type': 'LinearLR', 'total_iters': 10}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from torch.optim import lr_scheduler

from hookline.core import ConfigError

from .registries import PARAM_SCHEDULERS

__all__ = ["RUN", "RUN_LENGTH_KEYS", "SchedulerSteps", "check_run_length", "fill_run_lengths"]

#: the value that says "the run's length" (``T_max: run``)
RUN = "run"
#: scheduler class -> (its length key, whether leaving the key out means the run's length)
RUN_LENGTH_KEYS: dict[type, tuple[str, bool]] = {
    lr_scheduler.CosineAnnealingLR: ("T_max", True),
    lr_scheduler.OneCycleLR: ("total_steps", True),
    lr_scheduler.LinearLR: ("total_iters", False),
    lr_scheduler.PolynomialLR: ("total_iters", False),
}
#: what a length that follows the run is while there is no run to measure (argument checks,
#: a Runner that only validates or tests: its schedulers never step)
_PLACEHOLDER = 100
_ACCEPTED = ", ".join(f"{cls.__name__} {key}" for cls, (key, _) in RUN_LENGTH_KEYS.items())


@dataclass(frozen=True)
class SchedulerSteps:
    """How often :class:`~hookline.hooks.ParamSchedulerHook` steps a scheduler in one run.

    ``per_epoch``: a ``by_epoch`` scheduler's steps; ``per_iter``: a
    per-iteration one's (once per optimizer step); None: unknown (a train
    dataloader without a length).

    Example::

        >>> SchedulerSteps(per_epoch=10, per_iter=450).of(by_epoch=False)
        450
    """

    per_epoch: int | None
    per_iter: int | None
    #: the run's iterations (None: unknown, or not measured): what a scheduler that steps
    #: after every iteration, accumulated or not (MMEngine's), gets per iteration
    iterations: int | None = None

    def of(self, by_epoch: bool, every_iteration: bool = False) -> int | None:
        """The steps a scheduler gets in the run (``every_iteration``: its class steps after
        every iteration, not once per optimizer step)."""
        if by_epoch:
            return self.per_epoch
        return self.iterations if every_iteration and self.iterations is not None \
            else self.per_iter

    @classmethod
    def of_run(cls, train_loop: Any, optim_wrapper: Any) -> SchedulerSteps | None:
        """The steps of the run ``train_loop`` makes (None without one), with the
        accumulation of ``optim_wrapper`` (an OptimWrapper, OptimWrapperDict or None)."""
        if train_loop is None:
            return None
        epoch_length = train_loop.epoch_length  # None: a loader without a length
        counts = _accumulation(optim_wrapper)
        if train_loop.by_epoch:
            return cls(train_loop.max_epochs, None if epoch_length is None else
                       train_loop.max_epochs * _updates(epoch_length, counts),
                       None if epoch_length is None else train_loop.max_epochs * epoch_length)
        return cls(None if epoch_length is None else train_loop.max_iters // epoch_length,
                   _updates(train_loop.max_iters, counts), train_loop.max_iters)


def _accumulation(optim_wrapper: Any) -> list[int]:
    wrappers = list(optim_wrapper.values()) if hasattr(optim_wrapper, "values") else [optim_wrapper]
    return sorted({int(getattr(w, "accumulative_counts", 1)) for w in wrappers}) or [1]


def _updates(iterations: int, counts: Sequence[int]) -> int:
    """Optimizer steps in ``iterations`` when each optimizer steps every ``counts[i]`` of them
    (and at the last one): per-iteration schedulers step when any optimizer does."""
    if len(counts) == 1:
        return math.ceil(iterations / counts[0])
    multiples = 0
    for size in range(1, len(counts) + 1):  # inclusion-exclusion over the common multiples
        for group in combinations(counts, size):
            multiples += (-1) ** (size + 1) * (iterations // math.lcm(*group))
    return multiples + (0 if any(iterations % c == 0 for c in counts) else 1)


# -- filling configs in ---------------------------------------------------------------------------
def fill_run_lengths(spec: Any, steps: SchedulerSteps | None, where: str = "param_scheduler"
                     ) -> Any:
    """``spec`` (a scheduler config, a list of them, or objects) with every length that
    follows the run filled in from ``steps``; with ``steps=None`` (no run to measure) a
    placeholder. A ``run`` where no length can follow the run is a :class:`ConfigError`."""
    if isinstance(spec, Sequence) and not isinstance(spec, (str, Mapping)):
        return [fill_run_lengths(item, steps, f"{where}[{i}]") for i, item in enumerate(spec)]
    if not isinstance(spec, Mapping):
        return spec
    by_epoch = spec.get("by_epoch", True)
    every_iteration = bool(getattr(_target(spec.get("type")), "steps_every_iteration", False))
    total = None if steps is None else steps.of(
        by_epoch if isinstance(by_epoch, bool) else True, every_iteration)
    return _fill(spec, total, where, by_epoch is not False, steps is not None and total is None)


def _fill(cfg: Mapping[str, Any], total: int | None, where: str, by_epoch: bool,
          unknown: bool = False) -> dict[str, Any]:
    out = dict(cfg)
    target = _target(cfg.get("type"))
    key, when_omitted = _length_key(target)
    for name in {k for _, (k, _) in RUN_LENGTH_KEYS.items()} - {key}:
        if out.get(name) == RUN:
            raise ConfigError(f"{where}.{name}: {RUN!r} (the run's length) is accepted by "
                              f"{_ACCEPTED}, not by {_name(target, cfg.get('type'))}")
    follows = key is not None and (out.get(key) == RUN or (
        when_omitted and out.get(key) is None and not (key == "total_steps" and "epochs" in out)))
    if follows and key is not None and unknown:
        raise ConfigError(f"{where}.{key} follows the run, but " + _unknown(by_epoch, key))
    if follows and key is not None:
        if total is None:  # no run to measure: after the scheduler's begin, if it has one
            begin = out.get("begin", 0)
            out[key] = _PLACEHOLDER + (begin if isinstance(begin, int) and begin > 0 else 0)
        else:
            out[key] = _positive(total, where, key, target, by_epoch)
    children = out.get("schedulers")
    if isinstance(children, list):
        spans = _spans(target, out.get("milestones"), total, len(children))
        out["schedulers"] = [
            _fill(child, span, f"{where}.schedulers[{j}]", by_epoch, unknown)
            if isinstance(child, Mapping) else child
            for j, (child, span) in enumerate(zip(children, spans))]
    return out


def _target(kind: Any) -> Any:
    if isinstance(kind, str):
        return PARAM_SCHEDULERS.get(kind) if kind in PARAM_SCHEDULERS else None
    return kind


def _length_key(target: Any) -> tuple[str | None, bool]:
    """The argument of ``target`` that, left out (or ``"run"``), is the run's length, and
    whether leaving it out means that: :data:`RUN_LENGTH_KEYS` for torch's schedulers; a
    class's own ``run_length_key`` (MMEngine's schedulers: ``end``, left out = the end of the
    run, in epochs or iterations by its ``by_epoch``, as MMEngine's Runner fills it in)."""
    for cls, entry in RUN_LENGTH_KEYS.items():
        if isinstance(target, type) and issubclass(target, cls):
            return entry
    own = getattr(target, "run_length_key", None) if isinstance(target, type) else None
    return (own, True) if isinstance(own, str) else (None, False)


def _name(target: Any, kind: Any) -> str:
    return getattr(target, "__name__", None) or str(kind)


def _spans(target: Any, milestones: Any, total: int | None, n: int) -> list[int | None]:
    """Each child's share of the run: SequentialLR's stretches between milestones."""
    if total is None or not (isinstance(target, type)
                             and issubclass(target, lr_scheduler.SequentialLR)):
        return [total] * n
    if not isinstance(milestones, (list, tuple)) or len(milestones) != n - 1 or not all(
            isinstance(m, int) and not isinstance(m, bool) for m in milestones):
        return [total] * n  # torch's own check reports the milestones
    bounds = [0, *milestones, total]
    return [bounds[i + 1] - bounds[i] for i in range(n)]


def _positive(total: int, where: str, key: str, target: Any, by_epoch: bool) -> int:
    if total >= 1:
        return total
    unit = "per-epoch" if by_epoch else "per-iteration"
    raise ConfigError(f"{where}.{key} follows the run, but {_name(target, None)} gets {total} "
                      f"{unit} steps in it (a run shorter than one epoch, or a SequentialLR "
                      f"milestone at or past the end): give {key} a number"
                      + (" or set by_epoch: false" if by_epoch else ""))


def _unknown(by_epoch: bool, key: str) -> str:
    """Why a run's length is unknown, and the fix (a train dataloader without a length)."""
    if by_epoch:
        return ("train_dataloader has no length (an IterableDataset), so an iteration-based "
                "run (max_iters) cannot tell where a pass over the data ends: set by_epoch: "
                "false to step it every iteration")
    return ("train_dataloader has no length (an IterableDataset), so the iterations of a run "
            f"of max_epochs are unknown: give {key} a number, or train with max_iters")


# -- checking built schedulers --------------------------------------------------------------------
def check_run_length(schedulers: Sequence[tuple[Any, bool]], steps: SchedulerSteps | None
                     ) -> list[str]:
    """Warnings (one line each) for fixed-length schedulers the run outlasts; a
    :class:`ConfigError` for a OneCycleLR it outlasts (torch would raise mid-run).

    Example::

        >>> import torch
        >>> opt = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
        >>> cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=450)
        >>> check_run_length([(cosine, False)], SchedulerSteps(60, 2700))  # doctest: +ELLIPSIS
        ['param_scheduler CosineAnnealingLR: T_max is 450 but the run steps it 2700 times ...']
    """
    if steps is None:
        return []
    warnings = []
    for scheduler, by_epoch in schedulers:
        total, unit = steps.of(by_epoch), "per epoch" if by_epoch else "per iteration"
        name = type(scheduler).__name__
        plateau = isinstance(scheduler, lr_scheduler.ReduceLROnPlateau)  # steps after val
        if total is None and by_epoch and not plateau:  # every pass, in an iter-based run
            raise ConfigError(f"param_scheduler {name} steps once per epoch, but "
                              + _unknown(True, ""))
        if total is None:  # a fixed length in a run of unknown length: nothing to check
            continue
        if isinstance(scheduler, lr_scheduler.OneCycleLR) and scheduler.total_steps < total:
            raise ConfigError(
                f"param_scheduler {name}: total_steps is {scheduler.total_steps} but the run "
                f"steps it {total} times ({unit}), and torch raises past total_steps; leave "
                "total_steps out (or total_steps: run) to fit the run, or shorten the run")
        if isinstance(scheduler, lr_scheduler.CosineAnnealingLR) and scheduler.T_max < total:
            warnings.append(
                f"param_scheduler {name}: T_max is {scheduler.T_max} but the run steps it "
                f"{total} times ({unit}): the LR will cycle back up after step {scheduler.T_max}; "
                "leave T_max out (or T_max: run) to anneal over the whole run")
    return warnings
