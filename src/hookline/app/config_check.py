"""Checks a whole config against the registries and constructor signatures, building nothing.

Every ``{"type": ...}`` entry is looked up in its registry and its other keys
are matched against the constructor's signature, so a typo anywhere in a
config is a :class:`ConfigError` naming where it is and suggesting the
closest accepted names, raised before a model, a dataset or a hook exists.

Example::

    >>> from hookline.app.config_check import validate_config
    >>> validate_config({"model": {"type": "DigitsCNN"},
    ...                  "hooks": [{"type": "CheckpointHook", "intervl": 2}]},
    ...                 ["model", "hooks"])
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: hooks[0]: hook type 'CheckpointHook' got unexpected argument(s) ...
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hookline.core import ConfigError, Priority, Registry
from hookline.core.registry import check_call
from hookline.engine.checks import positive_int
from hookline.engine.data import DATALOADER_KEYS
from hookline.engine.default_hooks import DEFAULT_HOOKS
from hookline.engine.evaluator import METRICS
from hookline.engine.loops import train_loop_config
from hookline.engine.registries import (
    DATASETS,
    HOOKS,
    LOOPS,
    LOSSES,
    MODELS,
    OPTIM_WRAPPERS,
    OPTIMIZERS,
    PARAM_SCHEDULERS,
)

from .defaults import LEGACY_DEFAULT_HOOKS

_PLAIN = (str, int, float, bool, list, type(None))
_SCHEDULER_EXTRAS = ("by_epoch", "monitor")
# MMEngine config keys and what hookline calls them
MMENGINE_KEYS = {
    "custom_hooks": "hooks",
    "train_cfg": "max_epochs / max_iters and val_interval (and train_loop for a loop class)",
    "val_evaluator": "metrics",
    "test_evaluator": "metrics",
    "randomness": "seed",
    "param_schedulers": "param_scheduler",
}


def validate_config(cfg: Mapping, accepted: Sequence[str]) -> None:
    """Raise :class:`ConfigError` for the first problem in ``cfg``; ``accepted`` are the
    Runner's argument names (``custom_imports`` and ``num_threads`` are always accepted)."""
    allowed = [*accepted, "custom_imports", "num_threads"]
    for key in cfg:
        if key in MMENGINE_KEYS:
            raise ConfigError(f"unknown top-level config key {key!r}: hookline's name for MMEngine's "
                              f"{key} is {MMENGINE_KEYS[key]}")
        if key not in allowed:
            raise ConfigError.unknown("top-level config key", key, allowed)
    if "model" in allowed and "model" not in cfg:
        raise ConfigError("the config has no 'model'; e.g. model: {type: DigitsCNN} "
                          f"(registered models: {', '.join(MODELS.names()) or 'none'})")
    for key, check in _CHECKS.items():
        if key in cfg:
            check(cfg[key], key, cfg)


def check_spec(registry: Registry, spec: Any, where: str, *, ignore: Sequence[str] = (),
               injected: Sequence[str] = ()) -> None:
    """Check one ``{"type": ..., **kwargs}`` entry without building it.

    Objects (anything but plain data) are accepted as they are: a Python
    config may hold a ready model or hook. ``ignore`` are keys the builder
    consumes itself; ``injected`` are arguments the builder supplies.
    """
    if not isinstance(spec, Mapping):
        if isinstance(spec, _PLAIN):
            raise ConfigError(f"{where} must be a mapping with a 'type' key, e.g. "
                              f"{{type: {_example(registry)}}}; got {spec!r}")
        return
    if "type" not in spec:
        raise ConfigError(f"{where} has no 'type'; registered {registry.name} types: "
                          f"{_listing(registry)}")
    kind = spec["type"]
    try:
        target = registry.get(kind) if isinstance(kind, str) else kind
        kwargs = {k: v for k, v in spec.items() if k != "type" and k not in ignore}
        for name in injected:
            if name in kwargs:
                raise ConfigError(f"{name!r} is filled in by the Runner; remove it")
            if _accepts(target, name):
                kwargs[name] = None
        label = kind if isinstance(kind, str) else getattr(kind, "__name__", repr(kind))
        check_call(target, kwargs, f"{registry.name} type {label!r}")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _accepts(target: Any, name: str) -> bool:
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _example(registry: Registry) -> str:
    names = registry.names()
    return names[0] if names else "..."


def _listing(registry: Registry) -> str:
    names = registry.names()
    return ", ".join(names) if len(names) <= 30 else f"{len(names)} names, e.g. {', '.join(names[:10])}"


# -- one checker per top-level key ---------------------------------------------------------------
def _model(spec: Any, where: str, _cfg: Mapping) -> None:
    check_spec(MODELS, spec, where)


def _loss(spec: Any, where: str, _cfg: Mapping) -> None:
    if spec is not None and not callable(spec):
        check_spec(LOSSES, spec, where)


def _optimizer(spec: Any, where: str, _cfg: Mapping) -> None:
    if spec is not None:
        check_spec(OPTIMIZERS, spec, where, injected=("params",))


def _schedulers(spec: Any, where: str, cfg: Mapping) -> None:
    if spec is None:
        return
    if cfg.get("optimizer") is None:
        raise ConfigError(f"{where} needs an optimizer: add optimizer: {{type: SGD, lr: 0.01}}")
    items = spec if isinstance(spec, list) else [spec]
    for i, item in enumerate(items):
        label = f"{where}[{i}]" if isinstance(spec, list) else where
        check_spec(PARAM_SCHEDULERS, item, label, ignore=_SCHEDULER_EXTRAS, injected=("optimizer",))
        children = item.get("schedulers") if isinstance(item, Mapping) else None
        if isinstance(children, list):
            for j, child in enumerate(children):
                check_spec(PARAM_SCHEDULERS, child, f"{label}.schedulers[{j}]",
                           ignore=_SCHEDULER_EXTRAS, injected=("optimizer",))


def _dataloader(spec: Any, where: str, _cfg: Mapping) -> None:
    if spec is None or not isinstance(spec, Mapping):
        if isinstance(spec, _PLAIN) and spec is not None:
            raise ConfigError(f"{where} must be a mapping: {{dataset: {{type: ...}}, batch_size: 32, "
                              f"shuffle: true}}; got {spec!r}")
        return
    accepted = ["dataset", *DATALOADER_KEYS]
    for key in spec:
        if key not in accepted:
            raise ConfigError(f"{where}: " + str(ConfigError.unknown("dataloader option", key,
                                                                     accepted)))
    if "dataset" not in spec:
        raise ConfigError(f"{where} needs a 'dataset' entry, e.g. dataset: {{type: "
                          f"{_example(DATASETS)}}}")
    check_spec(DATASETS, spec["dataset"], f"{where}.dataset")
    size = spec.get("batch_size", 1)
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ConfigError(f"{where}.batch_size must be a positive int, got {size!r}")


def _metrics(spec: Any, where: str, _cfg: Mapping) -> None:
    if spec is None:
        return
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where} must map names to metrics, e.g. {{accuracy: accuracy}}; "
                          f"got {spec!r}")
    for name, metric in spec.items():
        if isinstance(metric, str):
            try:
                METRICS.get(metric)
            except ConfigError as exc:
                raise ConfigError(f"{where}.{name}: {exc}") from None
        elif isinstance(metric, (Mapping, *_PLAIN)):
            check_spec(METRICS, metric, f"{where}.{name}")


def _hook(spec: Any, where: str) -> None:
    check_spec(HOOKS, spec, where, ignore=("priority",))
    if isinstance(spec, Mapping) and spec.get("priority") is not None:
        try:
            Priority.get(spec["priority"])
        except ConfigError as exc:
            raise ConfigError(f"{where}.priority: {exc}") from None


def _hooks(spec: Any, where: str, _cfg: Mapping) -> None:
    if spec is None:
        return
    if not isinstance(spec, (list, tuple)):
        raise ConfigError(f"{where} must be a list of hook configs, e.g. "
                          f"[{{type: EMAHook}}]; got {spec!r}")
    for i, item in enumerate(spec):
        _hook(item, f"{where}[{i}]")


def _default_hooks(spec: Any, where: str, _cfg: Mapping) -> None:
    if spec is None:
        return
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where} must map names to hook configs (or null to remove one); "
                          f"got {spec!r}")
    for key, item in spec.items():
        if item is None:
            continue
        if isinstance(item, Mapping) and "type" not in item:
            raise ConfigError(f"{where}.{key} has no 'type' (only the default hooks "
                              f"{', '.join([*DEFAULT_HOOKS, *LEGACY_DEFAULT_HOOKS])} can leave "
                              "it out)")
        _hook(item, f"{where}.{key}")


def _optim_wrapper(spec: Any, where: str, cfg: Mapping) -> None:
    if spec is None:
        return
    if cfg.get("optimizer") is not None:
        raise ConfigError("give optimizer or optim_wrapper (which holds its own optimizer), not both")
    if not isinstance(spec, Mapping):
        check_spec(OPTIM_WRAPPERS, spec, where)
        return
    if "type" not in spec and "optimizer" not in spec and spec and all(
            isinstance(v, Mapping) for v in spec.values()):  # several optimizers, by submodule
        for name, child in spec.items():
            _optim_wrapper(child, f"{where}.{name}", {})
        return
    if "optimizer" not in spec:
        raise ConfigError(f"{where} has no 'optimizer', e.g. {{type: OptimWrapper, optimizer: "
                          "{type: SGD, lr: 0.01}}")
    _optimizer(spec["optimizer"], f"{where}.optimizer", cfg)
    check_spec(OPTIM_WRAPPERS, {"type": "OptimWrapper", **spec}, where, ignore=("optimizer",),
               injected=("optimizer",))


def _train_loop(spec: Any, where: str, cfg: Mapping) -> None:
    if spec is None:
        return
    if isinstance(spec, str):
        spec = {"type": spec}
    if isinstance(spec, Mapping):  # the Runner fills in what the loop config leaves out
        given = {key: cfg[key] for key in ("max_epochs", "max_iters", "val_interval")
                 if cfg.get(key) is not None}
        try:
            spec = train_loop_config(spec, **{key: given.get(key) for key in
                                              ("max_epochs", "max_iters", "val_interval")})
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if spec is None:
            return
    check_spec(LOOPS, spec, where, injected=("runner", "dataloader"))


def _positive_int(value: Any, where: str, _cfg: Mapping) -> None:
    positive_int(value, where, allow_none=True)


def _lengths(value: Any, where: str, cfg: Mapping) -> None:
    _positive_int(value, where, cfg)
    if cfg.get("max_epochs") is not None and cfg.get("max_iters") is not None:
        raise ConfigError("give max_epochs or max_iters, not both")


def _int(value: Any, where: str, _cfg: Mapping) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{where} must be an int, got {value!r}")


def _checkpoint_path(value: Any, where: str, _cfg: Mapping) -> None:
    if value is None or (where == "resume" and value == "auto"):
        return
    if not isinstance(value, (str, Path)):
        raise ConfigError(f"{where} must be 'auto' or a checkpoint path, got {value!r}"
                          if where == "resume" else f"{where} must be a checkpoint path, got {value!r}")
    if not Path(value).exists():
        raise ConfigError(f"{where}: checkpoint {str(value)!r} not found"
                          + (" (use resume: auto to resume from the work dir when it has one)"
                             if where == "resume" else ""))


#: one checker per top-level key, each called as ``check(value, key, cfg)`` (``_cfg`` where unused)
_CHECKS: dict[str, Callable[[Any, str, Mapping], None]] = {
    "model": _model,
    "loss_fn": _loss,
    "optimizer": _optimizer,
    "optim_wrapper": _optim_wrapper,
    "train_loop": _train_loop,
    "param_scheduler": _schedulers,
    "train_dataloader": _dataloader,
    "val_dataloader": _dataloader,
    "test_dataloader": _dataloader,
    "metrics": _metrics,
    "hooks": _hooks,
    "default_hooks": _default_hooks,
    "max_epochs": _lengths,
    "max_iters": _lengths,
    "val_interval": _positive_int,
    "seed": _int,
    "num_threads": _positive_int,
    "resume": _checkpoint_path,
    "load_from": _checkpoint_path,
}
