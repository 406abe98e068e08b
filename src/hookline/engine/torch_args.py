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

    >>> from hookline.engine.scheduler_args import check_schedulers
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

from collections.abc import Mapping
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline.core import ConfigError, Registry

from .checks import boolean, finite_float, non_negative_int, one_of, positive_int
from .collate import resolve_collate_fn
from .config_target import (
    call_check,
    check_values,
    constructed,
    resolve_type,
    run_check_args,
    type_label,
)
from .data import DATALOADER_KEYS
from .optim_wrapper import check_clip_grad
from .registries import LOSSES, OPTIM_WRAPPERS, OPTIMIZERS
from .samplers import check_sampler_config
from .scheduler_args import dummy_optimizer, dummy_params, mark_runs_on

__all__ = ["check_dataloader", "check_loss", "check_optim_wrapper", "check_optimizer"]

_REDUCTIONS = ("none", "mean", "sum")
_DATALOADER_FLAGS = ("shuffle", "drop_last", "pin_memory", "persistent_workers")


# -- optimizers ---------------------------------------------------------------------------------
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
    target = resolve_type(OPTIMIZERS, spec, where, "{'type': 'SGD', 'lr': 0.01}")
    label = type_label(target, spec["type"])
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    if "params" in kwargs:
        raise ConfigError(f"{where}.params is filled in by the Runner (all the model's "
                          "parameters); remove it. For param groups (e.g. no weight decay on "
                          "biases and norms), build the optimizer yourself and pass the object: "
                          f"{where}=torch.optim.AdamW(groups, lr=...) (or optim_wrapper="
                          "{'optimizer': that object, 'clip_grad': ...}), or define "
                          "configure_optimizers() on the model")
    call_check(target, {**kwargs, "params": None}, f"optimizer type {label!r}", where)
    check_values(target, kwargs, where)
    if "lr" in kwargs and not isinstance(kwargs["lr"], torch.Tensor):
        finite_float(kwargs["lr"], f"{where}.lr", low=0)
    optimizer: torch.optim.Optimizer = constructed(
        lambda: target(dummy_params(), **kwargs), label, kwargs, where)
    return mark_runs_on(optimizer, f"{where}={ConfigError.brief(dict(spec))}")


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
    target = resolve_type(LOSSES, spec, where, "{'type': 'CrossEntropyLoss'}")
    label = type_label(target, spec["type"])
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    call_check(target, kwargs, f"loss type {label!r}", where)
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
    constructed(lambda: target(**kwargs), label, kwargs, where)


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
    target = resolve_type(OPTIM_WRAPPERS, {**spec, "type": kind}, where, "{'type': 'OptimWrapper'}")
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    kwargs.setdefault("optimizer", None)
    call_check(target, kwargs, f"optim_wrapper type {type_label(target, kind)!r}", where)
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
    if options.get("collate_fn") is not None:  # a function, or {'type': 'pseudo_collate'}
        options["collate_fn"] = resolve_collate_fn(options["collate_fn"], where)
    if options.get("worker_init_fn") is not None and not callable(options["worker_init_fn"]):
        raise ConfigError(f"{where}.worker_init_fn must be a function (from Python, not a "
                          f"config file), got {options['worker_init_fn']!r}")
    constructed(lambda: DataLoader(TensorDataset(torch.zeros(2)), **options), "DataLoader", options, where)
    dataset = spec["dataset"]
    if isinstance(dataset, Mapping) and datasets is not None and "type" in dataset:
        target = resolve_type(datasets, dataset, f"{where}.dataset", "{'type': ...}")
        kwargs = {k: v for k, v in dataset.items() if k != "type"}
        call_check(target, kwargs, f"dataset type {type_label(target, dataset['type'])!r}",
                    f"{where}.dataset")
        run_check_args(target, kwargs, f"{where}.dataset")
