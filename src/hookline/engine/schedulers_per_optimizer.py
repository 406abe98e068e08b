"""``param_scheduler`` for several optimizers (an ``OptimWrapperDict``), as MMEngine reads it.

With one optimizer wrapper per submodule (a GAN's ``generator`` and
``discriminator``), MMEngine takes ``param_scheduler`` either as a dict of
scheduler configs by optimizer name, or as one list of configs built for
every optimizer. :func:`per_optimizer` splits it that way, once for the
Runner's argument check and once for the build.

Example::

    >>> per_optimizer({"generator": {"type": "StepLR", "step_size": 2}}, ["generator", "critic"])
    [('generator', {'type': 'StepLR', 'step_size': 2})]
    >>> [name for name, _ in per_optimizer([{"type": "StepLR", "step_size": 2}], ["g", "d"])]
    ['g', 'd']

``runner.param_schedulers`` is MMEngine's shape: a list of schedulers, each
carrying ``by_epoch`` (:func:`with_by_epoch` sets it on torch schedulers too);
hookline's own consumers read ``(scheduler, by_epoch)`` pairs through
:func:`scheduler_pairs`, which also takes MMEngine's dict of lists by
optimizer name and the pairs a Lightning trainer facade gives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hookline.core import ConfigError

__all__ = ["load_scheduler_state", "per_optimizer", "scheduler_pairs", "with_by_epoch",
           "wrapper_names"]


def wrapper_names(optim_wrapper: Any) -> list[str] | None:
    """The optimizer names of an ``OptimWrapperDict`` (object or config: wrapper configs or
    wrapper objects by name), None for a single wrapper (or none) and for a config that a
    ``constructor`` builds (its names are known once it has built the wrappers)."""
    if isinstance(optim_wrapper, Mapping):
        if "constructor" in optim_wrapper:
            return None
        children = {k: v for k, v in optim_wrapper.items() if k != "type"}
        several = optim_wrapper.get("type") == "OptimWrapperDict" or (
            "type" not in optim_wrapper and "optimizer" not in optim_wrapper and children
            and all(isinstance(v, Mapping) or hasattr(v, "optimizer")
                    for v in children.values()))
        return list(children) if several else None
    if optim_wrapper is not None and not hasattr(optim_wrapper, "optimizer") \
            and callable(getattr(optim_wrapper, "keys", None)):
        return list(optim_wrapper.keys())
    return None


def per_optimizer(spec: Any, names: Sequence[str]) -> list[tuple[str, Any]]:
    """``[(optimizer name, scheduler spec), ...]``: a dict by optimizer name is split (an
    unknown name is a :class:`ConfigError`), anything else goes to every optimizer."""
    if spec is None:
        return []
    if isinstance(spec, Mapping) and "type" not in spec:
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ConfigError(f"param_scheduler names optimizer(s) {unknown} this run does not "
                              f"have; its optimizers: {', '.join(names)} (or give one list of "
                              "schedulers, built for each of them)")
        return [(name, spec[name]) for name in names if name in spec]
    return [(name, spec) for name in names]


def with_by_epoch(pairs: Sequence[tuple[Any, bool]]) -> list[Any]:
    """The schedulers of ``(scheduler, by_epoch)`` pairs, each with ``scheduler.by_epoch``
    set (MMEngine's attribute, which hooks read), in the same order.

    Example::

        >>> import torch
        >>> opt = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
        >>> [s.by_epoch for s in with_by_epoch([(torch.optim.lr_scheduler.StepLR(opt, 2), False)])]
        [False]
    """
    schedulers = []
    for scheduler, by_epoch in pairs:
        scheduler.by_epoch = bool(by_epoch)
        schedulers.append(scheduler)
    return schedulers


def scheduler_pairs(schedulers: Any) -> list[tuple[Any, bool]]:
    """``[(scheduler, by_epoch), ...]`` of ``runner.param_schedulers``: a list of schedulers
    (``by_epoch`` read from each, True when absent, as the Runner builds them), MMEngine's
    dict of such lists by optimizer name, or ``(scheduler, by_epoch)`` pairs; ``[]`` for None.

    Example::

        >>> from types import SimpleNamespace
        >>> step, warm = SimpleNamespace(by_epoch=True), SimpleNamespace(by_epoch=False)
        >>> [b for _, b in scheduler_pairs({"g": [step], "d": [warm]})]
        [True, False]
    """
    if not schedulers:
        return []
    items = [s for group in schedulers.values() for s in group] \
        if isinstance(schedulers, Mapping) else list(schedulers)
    return [item if isinstance(item, tuple) else (item, bool(getattr(item, "by_epoch", True)))
            for item in items]


def load_scheduler_state(scheduler: Any, by_epoch: bool, state: Mapping[str, Any]) -> None:
    """``scheduler.load_state_dict(state)``, keeping the run's ``by_epoch`` on a scheduler
    that carries one: a torch scheduler's state dict holds its attributes, so a checkpoint
    may hold ``by_epoch`` (or, written before it was set, none); the run's config decides."""
    scheduler.load_state_dict(state)
    if hasattr(scheduler, "by_epoch"):
        scheduler.by_epoch = bool(by_epoch)
