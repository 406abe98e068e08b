"""Optimizer, scheduler, loss, optimizer-wrapper and dataloader configs checked without a model.

Each check validates a ``{"type": ...}`` config (or a DataLoader config)
before anything real is built: the class is looked up in its registry, the
keys are matched against its signature, each value is compared with the
constructor's default (a number where the default is a number, ``True`` /
``False`` where it is a bool, as many numbers as a tuple default has), NaN
is refused, a few values torch accepts silently are refused
(``T_max: -5``, ``shuffle: "yes"``, a negative ``max_norm``) and then the
torch class itself is constructed on a dummy parameter (optimizers,
schedulers), with no parameters at all (losses) or on a dummy dataset
(dataloaders), so torch's own checks run. Every problem is one
:class:`ConfigError` naming the key.

Example::

    >>> from hookline.engine.torch_args import check_optimizer, check_schedulers
    >>> dummy = check_optimizer({"type": "Adam", "lr": 1e-3})
    >>> check_schedulers({"type": "CosineAnnealingLR", "T_max": 10}, dummy)
    >>> check_optimizer({"type": "Adam", "lr": "fast"})
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: optimizer.lr must be a number (Adam's default is 0.001), got 'fast'
    >>> check_schedulers({"type": "CosineAnnealingLR", "T_max": -5}, dummy)
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: param_scheduler.T_max must be an int >= 1, got -5
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline.core import ConfigError, Registry
from hookline.core.registry import check_call

from .checks import boolean, finite_float, is_number, non_negative_int, one_of, positive_int
from .data import DATALOADER_KEYS
from .mmengine_options import refuse_mmengine_options
from .optim_wrapper import check_clip_grad
from .registries import LOSSES, OPTIM_WRAPPERS, OPTIMIZERS, PARAM_SCHEDULERS
from .samplers import check_sampler_config
from .schedule_length import fill_run_lengths

__all__ = ["check_dataloader", "check_loss", "check_optim_wrapper", "check_optimizer",
           "check_schedulers", "check_values", "dummy_optimizer", "run_check_args"]

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
_REDUCTIONS = ("none", "mean", "sum")
_DATALOADER_FLAGS = ("shuffle", "drop_last", "pin_memory", "persistent_workers")


# -- shared -------------------------------------------------------------------------------------
def _label(target: Any, kind: Any) -> str:
    return kind if isinstance(kind, str) else getattr(target, "__name__", repr(target))


def _resolve(registry: Registry, spec: Mapping[str, Any], where: str, example: str) -> Any:
    """The class a ``{"type": ...}`` config names."""
    if "type" not in spec:
        raise ConfigError(f"{where} config {dict(spec)!r} has no 'type', e.g. {example}; "
                          f"registered {registry.name} types: {', '.join(registry.names())}")
    kind = spec["type"]
    if isinstance(kind, str):
        try:
            return registry.get(kind)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if callable(kind):
        return kind
    raise ConfigError(f"{where}.type must be a {registry.name} name, got {kind!r}")


def _signature(target: Any) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        return {}


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, (list, tuple)):
        return any(_has_nan(item) for item in value)
    if isinstance(value, Mapping):
        return any(_has_nan(item) for item in value.values())
    return False


def check_values(target: Any, kwargs: Mapping[str, Any], where: str) -> None:
    """Each of ``kwargs`` against ``target``'s default of the same name, and NaN nowhere.

    A number default takes a number (or a tensor), a bool default ``True`` /
    ``False``, a tuple of numbers as many numbers; None and other defaults
    say nothing about the type.

    Example::

        >>> import torch
        >>> check_values(torch.optim.Adam, {"betas": [0.9]}, "optimizer")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: optimizer.betas must be a list of 2 numbers (...), got [0.9]
    """
    params = _signature(target)
    owner = getattr(target, "__name__", "the")
    for name, value in kwargs.items():
        key = f"{where}.{name}"
        if _has_nan(value):
            raise ConfigError(f"{key} is NaN; give a number")
        param = params.get(name)
        if param is None or param.default is inspect.Parameter.empty or value is None:
            continue
        default = param.default
        said = f"{owner}'s default is {default!r}"
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{key} must be true or false ({said}), got {value!r}")
        elif is_number(default):
            if not is_number(value) and not isinstance(value, torch.Tensor):
                raise ConfigError(f"{key} must be a number ({said}), got {value!r}")
        elif isinstance(default, tuple) and default and all(is_number(v) for v in default) \
                and (not isinstance(value, (list, tuple)) or len(value) != len(default)
                     or not all(is_number(v) for v in value)):
            raise ConfigError(f"{key} must be a list of {len(default)} numbers ({said}), "
                              f"got {value!r}")


def _constructed(build: Callable[[], Any], label: str, kwargs: Mapping[str, Any], where: str
                 ) -> Any:
    """``build()``; any exception becomes one ConfigError naming ``where`` and the arguments."""
    try:
        return build()
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except Exception as exc:  # torch's own checks: ValueError, TypeError, IndexError ...
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "no arguments"
        raise ConfigError(f"{where}: {label} rejects {shown}: {' '.join(str(exc).split())}") \
            from None


def run_check_args(target: Any, kwargs: Mapping[str, Any], where: str) -> bool:
    """Call ``target.check_args(**kwargs)`` when the class defines it; True if it did.

    ``check_args`` is the hook for classes whose constructor is too costly
    (or has side effects) to run while a config is checked: a staticmethod
    or classmethod taking the constructor's keyword arguments and raising
    :class:`ConfigError` for a bad value, building nothing.

    Example::

        >>> class Net:
        ...     @staticmethod
        ...     def check_args(width: int = 8) -> None:
        ...         positive_int(width, "width", owner="Net")
        >>> run_check_args(Net, {"width": 0}, "model")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: model: Net width must be an int >= 1, got 0
    """
    check = getattr(target, "check_args", None)
    if not callable(check):
        return False
    _constructed(lambda: check(**kwargs), f"{_label(target, None)}.check_args", kwargs, where)
    return True


# -- optimizers ---------------------------------------------------------------------------------
def _dummy_params() -> list[torch.nn.Parameter]:
    return [torch.nn.Parameter(torch.zeros(2, 2))]  # 2-D: Muon takes matrices only


#: attribute of a dummy optimizer: what the run trains with, for checking scheduler objects
#: (the optimizer object itself, or a description of the config the Runner builds it from)
_RUNS_ON = "_hookline_runs_on"


def _runs_on(dummy: torch.optim.Optimizer, optimizer: Any) -> torch.optim.Optimizer:
    """``dummy``, marked with the optimizer (object, or config in words) the run trains with."""
    try:
        setattr(dummy, _RUNS_ON, optimizer)
    except (AttributeError, TypeError):  # an optimizer class with __slots__: nothing to check
        pass
    return dummy


def dummy_optimizer(optimizer: torch.optim.Optimizer | None = None) -> torch.optim.Optimizer:
    """An optimizer of ``optimizer``'s class and settings over one dummy parameter (an SGD
    with momentum when ``optimizer`` is None or cannot be copied), for building schedulers on.
    Scheduler objects checked against it must be built on ``optimizer`` itself."""
    if optimizer is not None:
        try:
            return _runs_on(type(optimizer)(_dummy_params(), **optimizer.defaults), optimizer)
        except Exception:  # an optimizer whose defaults are not its arguments
            return _runs_on(torch.optim.SGD(_dummy_params(), lr=0.1, momentum=0.9), optimizer)
    return torch.optim.SGD(_dummy_params(), lr=0.1, momentum=0.9)


def check_optimizer(spec: Any, where: str = "optimizer") -> torch.optim.Optimizer | None:
    """Check an optimizer argument; for a config, the optimizer built on a dummy parameter.

    None and optimizer objects pass (and give None).
    """
    if spec is None or isinstance(spec, torch.optim.Optimizer):
        return None
    if isinstance(spec, type):
        raise ConfigError(f"{where} is the class {spec.__name__}, which needs the model's "
                          f"parameters: give {{'type': '{spec.__name__}', 'lr': ...}} and the "
                          "Runner fills them in")
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where} must be a torch.optim.Optimizer or a config such as "
                          f"{{'type': 'SGD', 'lr': 0.01}}, got {ConfigError.brief(spec)}")
    target = _resolve(OPTIMIZERS, spec, where, "{'type': 'SGD', 'lr': 0.01}")
    label = _label(target, spec["type"])
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    if "params" in kwargs:
        raise ConfigError(f"{where}.params is filled in by the Runner (all the model's "
                          "parameters); remove it. For param groups (e.g. no weight decay on "
                          "biases and norms), build the optimizer yourself and pass the object: "
                          f"{where}=torch.optim.AdamW(groups, lr=...) (or optim_wrapper="
                          "{'optimizer': that object, 'clip_grad': ...}), or define "
                          "configure_optimizers() on the model")
    _call_check(target, {**kwargs, "params": None}, f"optimizer type {label!r}", where)
    check_values(target, kwargs, where)
    if "lr" in kwargs and not isinstance(kwargs["lr"], torch.Tensor):
        finite_float(kwargs["lr"], f"{where}.lr", low=0)
    optimizer: torch.optim.Optimizer = _constructed(
        lambda: target(_dummy_params(), **kwargs), label, kwargs, where)
    return _runs_on(optimizer, f"{where}={ConfigError.brief(dict(spec))}")


def _call_check(target: Any, kwargs: Mapping[str, Any], what: str, where: str) -> None:
    refuse_mmengine_options(target, kwargs, where)  # paramwise_cfg ...: what to write instead
    try:
        check_call(target, kwargs, what)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


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
        _check_scheduler_optimizer(item, getattr(optimizer, _RUNS_ON, None), where)
        return item
    target = _resolve(PARAM_SCHEDULERS, item, where, "{'type': 'StepLR', 'step_size': 10}")
    label = _label(target, item["type"])
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
    params = _signature(target)
    _call_check(target, {**kwargs, **({"optimizer": None} if "optimizer" in params else {})},
                f"param_scheduler type {label!r}", where)
    check_values(target, {k: v for k, v in kwargs.items() if k != "schedulers"}, where)
    _scheduler_rules(kwargs, where)
    if "optimizer" in params:
        kwargs["optimizer"] = optimizer
    return _constructed(lambda: target(**kwargs), label,
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


# -- losses -------------------------------------------------------------------------------------
def check_loss(spec: Any, where: str = "loss_fn") -> None:
    """Check a loss argument: a callable, or a ``LOSSES`` config (torch losses are built, as
    they hold no weights; other classes run their ``check_args`` if they have one)."""
    if spec is None:
        return
    if isinstance(spec, type):
        hint = (f"an instance, {spec.__name__}()" if issubclass(spec, torch.nn.Module)
                else "an instance")
        raise ConfigError(f"{where} is the class {spec.__name__}; pass {hint} (or "
                          f"{{'type': '{spec.__name__}'}})")
    if isinstance(spec, str):
        simple = spec.replace("_", "").lower()
        close = [name for name in LOSSES.names()
                 if name.lower() in (simple, simple + "loss") or name.lower()[:-4] == simple]
        hint = f"; did you mean {{'type': '{close[0]}'}}?" if close else ""
        raise ConfigError(f"{where} must be a callable (e.g. torch.nn.CrossEntropyLoss()) or a "
                          f"config such as {{'type': 'CrossEntropyLoss'}}, got the string "
                          f"{ConfigError.brief(spec)}{hint}")
    if not isinstance(spec, Mapping):
        if not callable(spec):
            raise ConfigError(f"{where} must be a callable loss(preds, targets) or a config "
                              f"such as {{'type': 'CrossEntropyLoss'}}, got {ConfigError.brief(spec)}")
        return
    target = _resolve(LOSSES, spec, where, "{'type': 'CrossEntropyLoss'}")
    label = _label(target, spec["type"])
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    _call_check(target, kwargs, f"loss type {label!r}", where)
    check_values(target, kwargs, where)
    if run_check_args(target, kwargs, where):
        return
    if not getattr(target, "__module__", "").startswith("torch."):
        return  # a user's loss may load weights: its constructor is not run here
    if "reduction" in kwargs:
        choices = (*_REDUCTIONS, "batchmean") if label == "KLDivLoss" else _REDUCTIONS
        one_of(kwargs["reduction"], f"{where}.reduction", choices)
    if "label_smoothing" in kwargs:
        finite_float(kwargs["label_smoothing"], f"{where}.label_smoothing", low=0, high=1)
    _constructed(lambda: target(**kwargs), label, kwargs, where)


# -- optimizer wrappers -------------------------------------------------------------------------
def check_optim_wrapper(spec: Any, where: str = "optim_wrapper") -> torch.optim.Optimizer | None:
    """Check an ``optim_wrapper`` config: its optimizer (built on a dummy parameter, returned
    for a single wrapper), ``clip_grad`` and ``accumulative_counts``. Wrapper objects pass."""
    if spec is None or not isinstance(spec, Mapping):
        if spec is not None and isinstance(spec, (str, int, float, bool, list, type)):
            raise ConfigError(f"{where} must be an OptimWrapper or a config such as "
                              "{'optimizer': {'type': 'SGD', 'lr': 0.01}}, got " + repr(spec))
        inner = getattr(spec, "optimizer", None)  # a wrapper object: schedulers go on its own
        return dummy_optimizer(inner) if isinstance(inner, torch.optim.Optimizer) else None
    from .build import check_constructor  # noqa: PLC0415  (build imports the wrappers)
    from .configure_optimizers import wraps_model_optimizers  # noqa: PLC0415  (imports build)
    if "constructor" in spec:  # MMEngine's constructor builds the wrapper(s) from the model
        check_constructor(spec, where)
        return None
    options_only = wraps_model_optimizers(spec)  # the model's configure_optimizers() optimizer
    if not options_only and (spec.get("type") == "OptimWrapperDict" or (
            "type" not in spec and "optimizer" not in spec and spec)):
        for name, child in spec.items():  # several optimizers, by submodule
            if name != "type":
                check_optim_wrapper(child, f"{where}.{name}")
        return None
    if "optimizer" not in spec and not options_only:
        raise ConfigError(f"{where} has no 'optimizer', e.g. {{type: OptimWrapper, optimizer: "
                          "{type: SGD, lr: 0.01}} (without one, configure_optimizers() of the "
                          "model must give it)")
    optimizer = (check_optimizer(spec["optimizer"], f"{where}.optimizer") if "optimizer" in spec
                 else None)  # checked when the Runner is built, with the model's
    if isinstance(spec.get("optimizer"), torch.optim.Optimizer):  # schedulers go on that one
        optimizer = dummy_optimizer(spec["optimizer"])
    kind = spec.get("type", "OptimWrapper")
    target = _resolve(OPTIM_WRAPPERS, {**spec, "type": kind}, where, "{'type': 'OptimWrapper'}")
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    kwargs.setdefault("optimizer", None)
    _call_check(target, kwargs, f"optim_wrapper type {_label(target, kind)!r}", where)
    positive_int(spec.get("accumulative_counts", 1), f"{where}.accumulative_counts")
    check_clip_grad(spec.get("clip_grad"), f"{where}.clip_grad")
    return optimizer


# -- dataloaders --------------------------------------------------------------------------------
def check_dataloader(spec: Any, where: str, *, datasets: Registry | None = None) -> None:
    """Check a dataloader argument: a DataLoader, or a config whose options are DataLoader's
    (checked by building a DataLoader over a dummy dataset) and whose dataset is an object or
    a ``datasets`` config (its class's ``check_args`` runs if it has one; nothing is loaded)."""
    if spec is None or isinstance(spec, DataLoader):
        return
    if callable(getattr(spec, "train_dataloader", None)) and callable(getattr(spec, "setup", None)):
        raise ConfigError(f"{where} got a LightningDataModule ({type(spec).__name__}); the Runner "
                          "takes its loaders: dm.prepare_data(); dm.setup('fit'); then "
                          "train_dataloader=dm.train_dataloader(), val_dataloader="
                          "dm.val_dataloader() (dm.setup('test'); test_dataloader="
                          "dm.test_dataloader() for runner.test())")
    loaders = list(spec.values()) if isinstance(spec, Mapping) else spec
    if isinstance(loaders, (list, tuple)) and len(loaders) > 1 \
            and all(isinstance(x, DataLoader) for x in loaders):
        raise ConfigError(f"{where} got {len(loaders)} DataLoaders (Lightning's multiple "
                          f"dataloaders): a Runner takes one {where}; pass one DataLoader (to "
                          "score several sets, run runner.val() once per loader, or join the "
                          "datasets with torch.utils.data.ConcatDataset)")
    if not isinstance(spec, Mapping):
        hint = ("; for batches already made, pass DataLoader(batches, batch_size=None)"
                if isinstance(spec, (list, tuple)) else "")
        raise ConfigError(f"{where} must be a torch DataLoader or a config such as {{dataset: "
                          f"{{type: ...}}, batch_size: 32, shuffle: true}}, got "
                          f"{ConfigError.brief(spec)}{hint}")
    accepted = ("dataset", "sampler", *DATALOADER_KEYS)
    for key in spec:
        if key not in accepted:
            raise ConfigError(f"{where}: {ConfigError.unknown('dataloader option', key, accepted)}")
    if spec.get("dataset") is None:
        raise ConfigError(f"{where} needs a 'dataset' entry, e.g. dataset: {{type: ...}}")
    if spec.get("sampler") is not None:  # MMEngine's sampler={'type': 'InfiniteSampler', ...}
        check_sampler_config(spec["sampler"], where, shuffle_given="shuffle" in spec)
    options = {k: v for k, v in spec.items() if k not in ("dataset", "sampler")}
    positive_int(options.get("batch_size", 1), f"{where}.batch_size")
    non_negative_int(options.get("num_workers", 0), f"{where}.num_workers")
    positive_int(options.get("prefetch_factor"), f"{where}.prefetch_factor", allow_none=True)
    finite_float(options.get("timeout", 0), f"{where}.timeout", low=0)
    for flag in _DATALOADER_FLAGS:
        if flag in options:
            boolean(options[flag], f"{where}.{flag}")
    for name in ("collate_fn", "worker_init_fn"):
        if options.get(name) is not None and not callable(options[name]):
            raise ConfigError(f"{where}.{name} must be a function (from Python, not a config "
                              f"file), got {options[name]!r}")
    _constructed(lambda: DataLoader(TensorDataset(torch.zeros(2)), **options), "DataLoader", options, where)
    dataset = spec["dataset"]
    if isinstance(dataset, Mapping) and datasets is not None and "type" in dataset:
        target = _resolve(datasets, dataset, f"{where}.dataset", "{'type': ...}")
        kwargs = {k: v for k, v in dataset.items() if k != "type"}
        _call_check(target, kwargs, f"dataset type {_label(target, dataset['type'])!r}",
                    f"{where}.dataset")
        run_check_args(target, kwargs, f"{where}.dataset")
