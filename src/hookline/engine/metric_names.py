"""Metric names a run's validation reports, as far as they are known before it runs, and the
check that a name a hook or scheduler monitors (``save_best``, ``monitor``) is among them.

Shared by the config check (``hookline train``, :mod:`hookline.app.config_check.run`) and
the Runner, which checks its built hooks and schedulers at construction, before anything is
written (:func:`check_monitored_names`). Names are known when every metric is known to return
one number (the built-in ``accuracy`` and ``mse``): their names, and ``loss`` with a
``loss_fn``. Any other metric may return a dict of names known only once it ran: a name is
then left to the first validation. Nor are names checked when the model has its own
validation step.

Example::

    >>> sources = [("validation", reported_names({"accuracy": "accuracy"}, {"loss"}))]
    >>> check_named("val_loss", "EarlyStoppingHook monitor", sources, val_prefix=True)
    >>> check_named("acc", "CheckpointHook save_best", sources)
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: CheckpointHook save_best: 'acc' is not a validation metric ...
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.core.errors import closest_names

from .metrics import returns_one_number

__all__ = ["VAL_PREFIXES", "check_monitored_names", "check_named", "monitored_number",
           "names_unchecked", "prefixed", "reported_names", "strip_val_prefix"]

#: False while a Runner is built for evaluation only (``hookline test`` / ``val``)
_CHECKING: ContextVar[bool] = ContextVar("hookline_check_monitored_names", default=True)


@contextmanager
def names_unchecked() -> Iterator[None]:
    """Runners built inside skip :func:`check_monitored_names`: ``hookline test`` / ``val``
    build a training config to evaluate, with no best checkpoint to keep."""
    token = _CHECKING.set(False)
    try:
        yield
    finally:
        _CHECKING.reset(token)

#: Lightning's prefixes of a validation metric's name (``val_loss``, ``val/accuracy``)
VAL_PREFIXES = ("val_", "val/")

#: the metric names a validation reports as far as known before it runs, and whether that
#: is all of them (False: a metric may report names known only once it ran)
Names = tuple[set[str], bool]


def reported_names(metrics: Any, loss: set[str]) -> Names:
    """The names a validation with ``metrics`` (a mapping of name -> metric) reports, as known
    now, and whether that is all of them."""
    if not isinstance(metrics, Mapping):
        return set(loss), True
    known = {name for name, spec in metrics.items() if returns_one_number(spec)}
    return {*known, *loss}, len(known) == len(metrics)


def strip_val_prefix(name: str, names: Any) -> str:
    """``name``, or the name without a Lightning ``val_`` / ``val/`` prefix when only that
    one is among ``names``."""
    if name in names:
        return name
    for prefix in VAL_PREFIXES:
        if name.startswith(prefix) and name[len(prefix):] in names:
            return name[len(prefix):]
    return name


def prefixed(prefix: str, name: str) -> str:
    """A validation (``prefix="val"``) or test value's name as Keras and Lightning's callbacks
    see it: ``<prefix>_<name>``, or ``name`` itself when it already says so (a LightningModule's
    ``self.log("val_loss")``, a metric named ``"val/acc"``).

        >>> prefixed("val", "acc"), prefixed("val", "val_loss"), prefixed("val", "val/acc")
        ('val_acc', 'val_loss', 'val/acc')
    """
    return name if name.startswith((f"{prefix}_", f"{prefix}/")) else f"{prefix}_{name}"


def monitored_number(value: Any, key: str, owner: str) -> float:
    """``value`` (a validation metric's, under ``key``) as a float, or a :class:`ConfigError`
    naming the key and what it holds.

        >>> monitored_number([0.1, 0.2], "acc", "EarlyStoppingHook monitor")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: EarlyStoppingHook monitor: the validation metric 'acc' ...
    """
    if isinstance(value, torch.Tensor):
        if value.numel() == 1:
            return float(value.item())
    elif not isinstance(value, (str, bytes)):
        try:
            return float(value)  # a number, a NumPy scalar
        except (TypeError, ValueError):
            pass
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    raise ConfigError(f"{owner}: the validation metric {key!r} is a {type(value).__name__} "
                      f"({shown}), not one number; monitor a metric that returns one number, "
                      "or a key of the dict a metric returns (e.g. 'accuracy/top1')")


def check_named(name: str, where: str, sources: list[tuple[str, Names]], *,
                val_prefix: bool = False) -> None:
    """``name`` must be among the metric names of every source whose names are all known
    (``val_prefix``: also accepted with a ``val_`` / ``val/`` prefix)."""
    for source, (names, complete) in sources:
        if name in names or (val_prefix and strip_val_prefix(name, names) in names):
            continue
        if not complete:  # a metric may report it: the first validation tells
            continue
        bare = name
        if val_prefix:
            for prefix in VAL_PREFIXES:
                if name.startswith(prefix):
                    bare = name[len(prefix):]
        close = closest_names(bare, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        reports = ", ".join(sorted(names)) or "nothing (no metrics and no loss_fn)"
        raise ConfigError(f"{where}: {name!r} is not a validation metric of this run{hint} "
                          f"({source} reports: {reports})")


def _is(hook: Any, name: str) -> bool:
    """Whether ``hook`` is a hookline hook class of that name, or a subclass (the engine does
    not import the hooks)."""
    return any(c.__name__ == name and c.__module__.startswith("hookline.")
               for c in type(hook).__mro__)


def _validates(hook: Any) -> bool:
    """Whether ``hook`` runs validations of its own during training (an EvalHook)."""
    return _is(hook, "EvalHook")


def _adds_metrics(hook: Any) -> bool:
    """Whether ``hook`` is a user's hook acting after validation: it may add metrics to the
    dict the hooks after it see, so the names are not all known."""
    module = type(hook).__module__ or ""
    if module == "hookline" or module.startswith("hookline."):
        return False
    return any(name in vars(c) for c in type(hook).__mro__[:-1] if c.__module__ == module
               for name in ("after_val_epoch", "after_val", "_after_epoch"))


def check_monitored_names(runner: Any) -> None:
    """At a Runner's construction: each ``save_best`` (CheckpointHook, EvalHook) and
    ``monitor`` (EarlyStoppingHook, ReduceLROnPlateau) of a run that trains must name a
    metric its validation reports (where the names are known), and a CheckpointHook's
    ``save_best`` needs a validation at all."""
    if getattr(runner, "train_loop", None) is None or not _CHECKING.get():
        return  # no training configured: no best checkpoint, no early stop
    hooks = list(runner.hooks.hooks)
    validates = runner.val_loop is not None or any(_validates(h) for h in hooks)
    for hook in hooks:
        if _is(hook, "CheckpointHook") and getattr(hook, "save_best", None) is not None \
                and not validates:
            raise ConfigError(
                f"{type(hook).__name__}(save_best={hook.save_best!r}) keeps the checkpoint "
                "with the best validation metric, but this run has no validation: give "
                "val_dataloader= (and metrics=), or drop save_best")
    model = runner.model
    if any(callable(getattr(model, step, None)) for step in ("validation_step", "val_step")):
        return  # validation reports what the model's own step returns: unknown until it runs
    loss = {"loss"} if runner.loss_fn is not None else set()
    open_ended = any(_adds_metrics(h) for h in hooks)
    runner_names = reported_names(runner.metrics, loss)
    if open_ended or (runner.val_loop is not None
                      and type(runner.val_loop).__module__.split(".")[0] != "hookline"):
        runner_names = (runner_names[0], False)
    sources: list[tuple[str, Names]] = []
    if runner.val_loop is not None:
        sources.append(("validation", runner_names))
    for hook in hooks:
        if not _validates(hook):
            continue
        own = getattr(hook, "metrics", None)
        names = reported_names(own, loss) if isinstance(own, Mapping) else runner_names
        if open_ended:
            names = (names[0], False)
        where = type(hook).__name__
        sources.append((f"{where} (validation)", names))
        if isinstance(hook.save_best, str) and hook.save_best != "auto":
            check_named(hook.save_best, f"{where} save_best", [(where, names)])
    for hook in hooks:
        kind = type(hook).__name__
        if _validates(hook):
            continue
        save_best = getattr(hook, "save_best", None)
        if isinstance(save_best, str) and save_best != "auto" and _is(hook, "CheckpointHook"):
            check_named(save_best, f"{kind} save_best", sources, val_prefix=True)
        if _is(hook, "EarlyStoppingHook") and getattr(hook, "strict", True) is not False \
                and isinstance(getattr(hook, "monitor", None), str):
            check_named(hook.monitor, f"{kind} monitor", sources, val_prefix=True)
    for scheduler in _schedulers(runner):
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            monitor = getattr(scheduler, "monitor", "loss")
            if isinstance(monitor, str):
                check_named(monitor, "ReduceLROnPlateau monitor", sources, val_prefix=True)


def _schedulers(runner: Any) -> list[Any]:
    found: list[Any] = []
    for item in getattr(runner, "param_schedulers", None) or []:
        if isinstance(item, Mapping):
            for value in item.values():
                found += value if isinstance(value, (list, tuple)) else [value]
        elif isinstance(item, (list, tuple)):
            found += list(item)
        else:
            found.append(item)
    return found
