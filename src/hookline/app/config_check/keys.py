"""One checker per top-level config key: ``CHECKS[key](value, key, cfg)``.

Registry entries go through :func:`~hookline.app.config_check.spec.check_spec`
(names and signatures); optimizer, scheduler, loss, optimizer-wrapper and
dataloader configs then through :mod:`hookline.engine.torch_args` (values,
and torch's own checks on dummies); hooks through
:mod:`~hookline.app.config_check.hooks`; the device and the work dir
through :mod:`hookline.engine.environment`.

Example::

    >>> import hookline.demo.registry  # registers the demo's DigitsDataset
    >>> from hookline.app.config_check.keys import CHECKS
    >>> CHECKS["train_dataloader"]({"dataset": {"type": "DigitsDataset"}, "shuffle": "yes"},
    ...                            "train_dataloader", {})
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: train_dataloader.shuffle must be true or false, got 'yes'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hookline.core import ConfigError
from hookline.engine.arguments import check_configure_optimizers, check_fast_data, check_hooks_argument
from hookline.engine.build import check_constructor
from hookline.engine.checks import positive_int
from hookline.engine.config_target import run_check_args
from hookline.engine.configure_optimizers import wraps_model_optimizers
from hookline.engine.default_hooks import DEFAULT_HOOKS, LEGACY_DEFAULT_HOOKS, check_default_hooks
from hookline.engine.environment import check_device, check_work_dir
from hookline.engine.eval_loop import eval_loop_config
from hookline.engine.loops import train_loop_config
from hookline.engine.registries import (
    DATASETS,
    HOOKS,
    LOOPS,
    LOSSES,
    METRICS,
    MODELS,
    OPTIM_WRAPPERS,
    OPTIMIZERS,
    PARAM_SCHEDULERS,
)
from hookline.engine.schedule_length import fill_run_lengths
from hookline.engine.scheduler_args import SCHEDULER_EXTRAS, check_schedulers, dummy_optimizer
from hookline.engine.schedulers_per_optimizer import per_optimizer, wrapper_names
from hookline.engine.torch_args import (
    check_dataloader,
    check_loss,
    check_optim_wrapper,
    check_optimizer,
)

from .hooks import check_hook
from .spec import PLAIN, check_spec, spec_kwargs

__all__ = ["CHECKS", "config_scope"]


# -- one checker per top-level key ---------------------------------------------------------------
def _model(spec: Any, where: str, _cfg: Mapping) -> None:
    target = check_spec(MODELS, spec, where)
    if target is not None:  # a model is never built here; its check_args runs if it has one
        run_check_args(target, spec_kwargs(spec), where)


def _loss(spec: Any, where: str, _cfg: Mapping) -> None:
    if spec is not None and not callable(spec):
        check_spec(LOSSES, spec, where)
    check_loss(spec, where)


def _optimizer(spec: Any, where: str, _cfg: Mapping) -> None:
    if spec is not None:
        check_spec(OPTIMIZERS, spec, where, injected=("params",))
        check_optimizer(spec, where)


def _schedulers(spec: Any, where: str, cfg: Mapping) -> None:
    if spec is None:
        return
    if cfg.get("optimizer") is None and cfg.get("optim_wrapper") is None:
        raise ConfigError(f"{where} needs an optimizer: add optimizer: {{type: SGD, lr: 0.01}}")
    wrapper = cfg.get("optim_wrapper")
    names = wrapper_names(wrapper) if cfg.get("optimizer") is None else None
    if names is not None and isinstance(wrapper, Mapping):  # several optimizers: MMEngine's forms
        for name, part in per_optimizer(spec, names):
            child = check_optim_wrapper(wrapper[name], f"optim_wrapper.{name}")
            _scheduler_entries(part, f"{where}.{name}", child or dummy_optimizer())
        return
    if cfg.get("optimizer") is not None:
        dummy = check_optimizer(cfg["optimizer"])
    else:
        dummy = check_optim_wrapper(wrapper) or dummy_optimizer()  # or configure_optimizers()'s
    _scheduler_entries(spec, where, dummy)


def _scheduler_entries(spec: Any, where: str, dummy: Any) -> None:
    """Each scheduler entry's type and arguments, then the schedulers built on ``dummy``."""
    spec = fill_run_lengths(spec, None, where)  # T_max left out follows the run: a placeholder
    items = spec if isinstance(spec, list) else [spec]
    for i, item in enumerate(items):
        label = f"{where}[{i}]" if isinstance(spec, list) else where
        check_spec(PARAM_SCHEDULERS, item, label, ignore=SCHEDULER_EXTRAS, injected=("optimizer",))
        children = item.get("schedulers") if isinstance(item, Mapping) else None
        if isinstance(children, list):
            for j, child in enumerate(children):
                check_spec(PARAM_SCHEDULERS, child, f"{label}.schedulers[{j}]",
                           ignore=SCHEDULER_EXTRAS, injected=("optimizer",))
    check_schedulers(spec, dummy, where)


def _dataloader(spec: Any, where: str, _cfg: Mapping) -> None:
    if isinstance(spec, Mapping) and spec.get("dataset") is not None:
        target = check_spec(DATASETS, spec["dataset"], f"{where}.dataset")
        dataset = spec["dataset"]
        if isinstance(dataset, Mapping) and "_scope_" in dataset:  # built in its scope: the class
            spec = {**spec, "dataset": {**spec_kwargs(dataset), "type": target}}
    check_dataloader(spec, where, datasets=DATASETS)


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
        elif isinstance(metric, (Mapping, *PLAIN)):
            check_spec(METRICS, metric, f"{where}.{name}")


def _hooks(spec: Any, where: str, _cfg: Mapping) -> None:
    if spec is None:
        return
    if not isinstance(spec, (list, tuple)):
        check_hooks_argument(spec)
    for i, item in enumerate(spec):
        check_hook(item, f"{where}[{i}]")


def _default_hooks(spec: Any, where: str, _cfg: Mapping) -> None:
    if isinstance(spec, Mapping) and "runtime_info" in spec and spec["runtime_info"] is None:
        raise ConfigError(f"{where}.runtime_info: hookline has no RuntimeInfoHook among its "
                          "default hooks, so there is nothing to remove: the Runner itself keeps "
                          "MMEngine's run information (lr, epoch, iter) in the message hub; "
                          "delete the key (and {type: RuntimeInfoHook} is not needed either)")
    check_default_hooks(spec)
    known = {**DEFAULT_HOOKS, **LEGACY_DEFAULT_HOOKS}
    for key, item in (spec or {}).items():
        if isinstance(item, Mapping) and "type" not in item:
            item = {**known[key], **item}  # resolve_config fills these in; validate may not have
        if item is not None:
            check_hook(item, f"{where}.{key}")


def _optim_wrapper(spec: Any, where: str, cfg: Mapping) -> None:
    if spec is None:
        return
    if cfg.get("optimizer") is not None:
        raise ConfigError("give optimizer or optim_wrapper (which holds its own optimizer), not both")
    if not isinstance(spec, Mapping):
        check_spec(OPTIM_WRAPPERS, spec, where)
        return
    if "constructor" in spec:  # MMEngine's optim_wrapper constructor: the Runner builds it
        check_constructor(spec, where)
        return
    if wraps_model_optimizers(spec):  # how to step the model's configure_optimizers() ones
        check_configure_optimizers(cfg.get("model"))
        check_spec(OPTIM_WRAPPERS, {"type": "OptimWrapper", **spec}, where,
                   injected=("optimizer",))
        check_optim_wrapper(spec, where)
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
    check_optim_wrapper(spec, where)


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


def _eval_loop(spec: Any, where: str, cfg: Mapping) -> None:
    """``val_loop`` / ``test_loop``: a loop name or config (``type`` defaults to ValLoop /
    TestLoop), whose arguments the loop class takes, with its dataloader."""
    if spec is None:
        return
    mode = where.split("_", 1)[0]
    spec = eval_loop_config(spec, mode)
    if cfg.get(f"{mode}_dataloader") is None:
        raise ConfigError(f"{where} configures the {'validation' if mode == 'val' else 'test'} "
                          f"loop, but the config has no {mode}_dataloader")
    check_spec(LOOPS, spec, where, injected=("runner", "dataloader"))


def _positive_int(value: Any, where: str, _cfg: Mapping) -> None:
    positive_int(value, where, allow_none=True)


def _lengths(value: Any, where: str, cfg: Mapping) -> None:
    _positive_int(value, where, cfg)
    if cfg.get("max_epochs") is not None and cfg.get("max_iters") is not None:
        raise ConfigError("give max_epochs or max_iters, not both")


def _seed(value: Any, where: str, _cfg: Mapping) -> None:
    if value is None:
        raise ConfigError(f"{where} must be an int; hookline always seeds its runs (null, "
                          "MMEngine's random seed, is not supported): give a number, e.g. seed: 0")
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{where} must be an int, got {value!r}")


def _experiment_name(value: Any, where: str, _cfg: Mapping) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"{where} must be a name (a non-empty string), got {value!r}")


def _default_scope(_value: Any, _where: str, cfg: Mapping) -> None:
    config_scope(cfg)


def _count(value: Any, where: str, _cfg: Mapping) -> None:
    positive_int(value, where)


def _fast_data(value: Any, where: str, _cfg: Mapping) -> None:
    check_fast_data(value, where)


def _checkpoint_path(value: Any, where: str, _cfg: Mapping) -> None:
    # resume: true / false are MMEngine's (true: resume load_from, else the newest checkpoint)
    if value is None or (where == "resume" and (value == "auto" or isinstance(value, bool))):
        return
    if not isinstance(value, (str, Path)):
        raise ConfigError(f"{where} must be 'auto', true, false or a checkpoint path, got {value!r}"
                          if where == "resume" else f"{where} must be a checkpoint path, got {value!r}")
    if not Path(value).exists():
        raise ConfigError(f"{where}: checkpoint {str(value)!r} not found"
                          + (" (use resume: auto to resume from the work dir when it has one)"
                             if where == "resume" else ""))


def _device(value: Any, _where: str, _cfg: Mapping) -> None:
    check_device(value)


def _work_dir(value: Any, _where: str, _cfg: Mapping) -> None:
    if value is not None:
        check_work_dir(value)


#: one checker per top-level key, each called as ``check(value, key, cfg)`` (``_cfg`` where unused)
CHECKS: dict[str, Callable[[Any, str, Mapping], None]] = {
    "model": _model,
    "loss_fn": _loss,
    "optimizer": _optimizer,
    "optim_wrapper": _optim_wrapper,
    "train_loop": _train_loop,
    "val_loop": _eval_loop,
    "test_loop": _eval_loop,
    "param_scheduler": _schedulers,
    "train_dataloader": _dataloader,
    "val_dataloader": _dataloader,
    "test_dataloader": _dataloader,
    "metrics": _metrics,
    "test_metrics": _metrics,
    "hooks": _hooks,
    "default_hooks": _default_hooks,
    "max_epochs": _lengths,
    "max_iters": _lengths,
    "val_interval": _positive_int,
    "seed": _seed,
    "experiment_name": _experiment_name,
    "default_scope": _default_scope,
    "num_threads": _positive_int,
    "device": _device,
    "resume": _checkpoint_path,
    "load_from": _checkpoint_path,
    "work_dir": _work_dir,
    "fast_data": _fast_data,
    "signal_sync_interval": _count,
}


def config_scope(cfg: Mapping) -> str | None:
    """The config's ``default_scope`` (MMEngine's key): the registry scope whose names win
    while the config is checked and its Runner built; None when it names none.

    Example::

        >>> config_scope({"default_scope": "mmengine"}), config_scope({})
        ('mmengine', None)
        >>> config_scope({"default_scope": "mmnothing"})
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: default_scope: no registry has scope 'mmnothing' ...
    """
    scope = cfg.get("default_scope")
    if scope is None:
        return None
    if not isinstance(scope, str) or not scope:
        raise ConfigError(f"default_scope must be a scope name such as mmengine, got {scope!r}")
    if HOOKS.find_scope(scope) is None and MODELS.find_scope(scope) is None:
        known = sorted({r.scope for root in (HOOKS, MODELS) for r in root.descendants()
                        if r.scope})
        raise ConfigError(f"default_scope: no registry has scope {scope!r} (known scopes: "
                          f"{', '.join(known) or 'none'}; a project's scope is known once "
                          "custom_imports imports its registry)")
    return scope
