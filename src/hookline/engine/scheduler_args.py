"""Scheduler configs checked without a model: each built on a stand-in optimizer.

:func:`check_schedulers` takes the Runner's ``param_scheduler`` (a config, a list of
them, or scheduler objects): a config's class is looked up, its keys and values are
checked (counts that torch takes negative, ``milestones``, NaN), and it is built on
:func:`dummy_optimizer`, so torch's own checks run; a scheduler object must be built on
the optimizer the run trains with.

Example::

    >>> dummy = dummy_optimizer()
    >>> check_schedulers({"type": "CosineAnnealingLR", "T_max": 10}, dummy)
    >>> check_schedulers({"type": "StepLR", "step_size": 0}, dummy)
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: param_scheduler.step_size must be an int >= 1, got 0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from hookline.core import ConfigError

from .checks import boolean, finite_float, non_negative_int, positive_int
from .config_target import call_check, check_values, constructed, resolve_type, signature_of, type_label
from .registries import PARAM_SCHEDULERS
from .schedule_length import fill_run_lengths

__all__ = ["RUNS_ON", "SCHEDULER_EXTRAS", "check_schedulers", "dummy_optimizer", "dummy_params",
           "mark_runs_on"]

#: scheduler arguments that count steps or epochs (torch takes negative values silently)
_SCHEDULER_COUNTS = ("T_max", "T_0", "T_mult", "step_size", "step_size_up", "total_iters",
                     "total_steps", "epochs", "steps_per_epoch")
#: scheduler arguments that are ints >= 0
_SCHEDULER_NON_NEGATIVE = ("patience", "cooldown")
#: scheduler arguments that are finite floats > 0 / >= 0
_SCHEDULER_POSITIVE = ("gamma",)
_SCHEDULER_AT_LEAST_ZERO = ("eta_min", "min_lr", "base_lr", "max_lr")
#: what the Runner's scheduler configs hold besides the scheduler's own arguments
SCHEDULER_EXTRAS = ("by_epoch", "monitor")


# -- stand-in optimizers ---------------------------------------------------------------------
def dummy_params() -> list[torch.nn.Parameter]:
    """What a stand-in optimizer holds: one 2-D parameter of zeros."""
    return [torch.nn.Parameter(torch.zeros(2, 2))]  # 2-D: Muon takes matrices only


#: attribute of a dummy optimizer: what the run trains with, for checking scheduler objects
#: (the optimizer object itself, or a description of the config the Runner builds it from)
RUNS_ON = "_hookline_runs_on"


def mark_runs_on(dummy: torch.optim.Optimizer, optimizer: Any) -> torch.optim.Optimizer:
    """``dummy``, marked with the optimizer (object, or config in words) the run trains with."""
    try:
        setattr(dummy, RUNS_ON, optimizer)
    except (AttributeError, TypeError):  # an optimizer class with __slots__: nothing to check
        pass
    return dummy


def dummy_optimizer(optimizer: torch.optim.Optimizer | None = None) -> torch.optim.Optimizer:
    """An optimizer of ``optimizer``'s class and settings over one dummy parameter (an SGD
    with momentum when ``optimizer`` is None or cannot be copied), for building schedulers on.
    Scheduler objects checked against it must be built on ``optimizer`` itself."""
    if optimizer is not None:
        try:
            return mark_runs_on(type(optimizer)(dummy_params(), **optimizer.defaults), optimizer)
        except Exception:  # an optimizer whose defaults are not its arguments
            return mark_runs_on(torch.optim.SGD(dummy_params(), lr=0.1, momentum=0.9), optimizer)
    return torch.optim.SGD(dummy_params(), lr=0.1, momentum=0.9)


# -- schedulers ---------------------------------------------------------------------------------
def check_schedulers(spec: Any, optimizer: torch.optim.Optimizer | None,
                     where: str = "param_scheduler") -> None:
    """Check a scheduler config (or a list of them), building each on ``optimizer`` (a dummy:
    :func:`check_optimizer`'s result or :func:`dummy_optimizer`). Scheduler objects pass."""
    if spec is None:
        return
    spec = fill_run_lengths(spec, None, where)  # lengths that follow the run: a placeholder
    listed = isinstance(spec, Sequence) and not isinstance(spec, (str, Mapping))
    items = list(spec) if listed else [spec]
    dummy = optimizer if optimizer is not None else dummy_optimizer()
    for i, item in enumerate(items):
        _check_scheduler(item, dummy, f"{where}[{i}]" if listed else where)


def _check_scheduler(item: Any, optimizer: torch.optim.Optimizer, where: str) -> Any:
    if not isinstance(item, Mapping):
        if isinstance(item, type):
            raise ConfigError(f"{where} is the class {item.__name__}, which needs the optimizer: "
                              f"give a config such as {{'type': '{item.__name__}', ...}} (the "
                              "Runner builds it on the run's optimizer), or a scheduler object "
                              "built on the optimizer you pass as optimizer=")
        if isinstance(item, (str, int, float, bool, list)) or not hasattr(item, "step"):
            raise ConfigError(f"{where} must be a scheduler or a config such as "
                              f"{{'type': 'StepLR', 'step_size': 10}}, got {ConfigError.brief(item)}")
        _check_scheduler_optimizer(item, getattr(optimizer, RUNS_ON, None), where)
        return item
    target = resolve_type(PARAM_SCHEDULERS, item, where, "{'type': 'StepLR', 'step_size': 10}")
    label = type_label(target, item["type"])
    kwargs = {k: v for k, v in item.items() if k != "type" and k not in SCHEDULER_EXTRAS}
    if "by_epoch" in item:
        boolean(item["by_epoch"], f"{where}.by_epoch")
    if item.get("monitor") is not None and (not isinstance(item["monitor"], str)
                                            or not item["monitor"]):
        raise ConfigError(f"{where}.monitor must be a validation metric name, got "
                          f"{item['monitor']!r}")
    if "optimizer" in kwargs:
        raise ConfigError(f"{where}.optimizer is filled in by the Runner; remove it")
    if isinstance(kwargs.get("schedulers"), list):  # SequentialLR / ChainedScheduler
        kwargs["schedulers"] = [_check_scheduler(child, optimizer, f"{where}.schedulers[{j}]")
                                for j, child in enumerate(kwargs["schedulers"])]
    params = signature_of(target)
    call_check(target, {**kwargs, **({"optimizer": None} if "optimizer" in params else {})},
                f"param_scheduler type {label!r}", where)
    check_values(target, {k: v for k, v in kwargs.items() if k != "schedulers"}, where)
    _scheduler_rules(kwargs, where)
    if "optimizer" in params:
        kwargs["optimizer"] = optimizer
    return constructed(lambda: target(**kwargs), label,
                        {k: v for k, v in kwargs.items() if k != "optimizer"}, where)


def _check_scheduler_optimizer(scheduler: Any, runs_on: Any, where: str) -> None:
    """A scheduler object must be built on the optimizer the run trains with (``runs_on``: that
    object, or the config the Runner builds it from, in words; None: unknown, not checked):
    on another one it changes that optimizer's rate, and the run trains at a constant rate."""
    own = getattr(scheduler, "optimizer", None)
    inner = getattr(own, "optimizer", None)
    if not isinstance(own, torch.optim.Optimizer) and isinstance(inner, torch.optim.Optimizer):
        own = inner  # built on an OptimWrapper (MMEngine's schedulers)
    if runs_on is None or not isinstance(own, torch.optim.Optimizer) or own is runs_on:
        return
    kind = type(scheduler).__name__
    if isinstance(runs_on, torch.optim.Optimizer):
        trains = f"the {type(runs_on).__name__} object it was given"
        fix = "build the scheduler on that optimizer object"
    else:
        trains = f"one it builds from {runs_on}"
        fix = "pass the optimizer object you built the scheduler on as optimizer="
    raise ConfigError(
        f"{where} is a {kind} built on another {type(own).__name__} object than the optimizer "
        f"the run trains with ({trains}): it would change that other optimizer's learning "
        f"rate, and the run would train at a constant one. Either {fix}, or give the "
        f"scheduler as a config, {{'type': '{kind}', ...}}, which the Runner builds on the "
        "run's optimizer")


def _scheduler_rules(kwargs: Mapping[str, Any], where: str) -> None:
    for name, value in kwargs.items():
        key = f"{where}.{name}"
        if name in _SCHEDULER_COUNTS:
            positive_int(value, key, allow_none=name in ("total_steps", "epochs",
                                                         "steps_per_epoch"))
        elif name in _SCHEDULER_NON_NEGATIVE:
            non_negative_int(value, key)
        elif name in _SCHEDULER_POSITIVE:
            finite_float(value, key, low=0, open_low=True)
        elif name in _SCHEDULER_AT_LEAST_ZERO:
            for each in value if isinstance(value, (list, tuple)) else [value]:
                finite_float(each, key, low=0)
        elif name == "milestones":
            if not isinstance(value, (list, tuple)):
                raise ConfigError(f"{key} must be a list of ints, got {value!r}")
            for each in value:
                non_negative_int(each, key)
