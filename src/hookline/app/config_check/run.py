"""Checks across keys: what training, a hook or a scheduler needs from the rest of the config.

- Training (``hookline train``) needs ``train_dataloader``, a length
  (``max_epochs`` or ``max_iters``), an optimizer unless the model brings its
  own ``train_step``, and a loss unless it brings ``training_step``.
- ``EarlyStoppingHook`` needs a ``val_dataloader``: it decides after each validation;
  a CheckpointHook's ``save_best`` needs a validation (``val_dataloader`` or an EvalHook).
- For training, a metric named by ``save_best`` (CheckpointHook, EvalHook),
  ``monitor`` (EarlyStoppingHook, ReduceLROnPlateau) must be one that every
  validation of the run reports, where the names are known before it runs:
  ``loss`` when there is a ``loss_fn``, and the name of each metric known to
  return one number (the built-in ``accuracy`` and ``mse``). A metric that
  may return a dict (any other callable, a registered function, a
  torchmetrics config) reports names known only once it ran: then a name
  that is not among the known ones is left to the check after the first
  validation. Nor are names checked when the model has its own
  ``validation_step``. ``hookline test`` / ``val`` never check them: no
  training, no best checkpoint.

Example::

    >>> import hookline.demo.registry  # registers the demo's DigitsCNN and DigitsDataset
    >>> from hookline.app.config_check.run import check_run
    >>> cfg = {"model": {"type": "DigitsCNN"}, "loss_fn": {"type": "CrossEntropyLoss"},
    ...        "optimizer": {"type": "SGD", "lr": 0.1}, "max_epochs": 1,
    ...        "train_dataloader": {"dataset": {"type": "DigitsDataset"}},
    ...        "val_dataloader": {"dataset": {"type": "DigitsDataset", "split": "val"}},
    ...        "metrics": {"accuracy": "accuracy"},
    ...        "default_hooks": {"checkpoint": {"type": "CheckpointHook", "save_best": "acc"}}}
    >>> check_run(cfg, for_training=True)
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: default_hooks.checkpoint.save_best: 'acc' is not a validation ...
    >>> check_run(cfg, for_training=False)  # hookline test / val: no best checkpoint to keep
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hookline.core import ConfigError
from hookline.engine.loops import train_loop_config
from hookline.engine.metric_names import Names, check_named, reported_names
from hookline.engine.registries import HOOKS, MODELS
from hookline.engine.step import own_method
from hookline.hooks import CheckpointHook, EarlyStoppingHook, EvalHook

from .spec import check_spec, spec_kwargs

__all__ = ["check_run"]

_EXAMPLE_LOADER = "{dataset: {type: DigitsDataset, split: train}, batch_size: 32}"


def check_run(cfg: Mapping, *, for_training: bool) -> None:
    """Raise :class:`ConfigError` for the first thing one part of ``cfg`` needs from another
    and does not get (``for_training``: also what training needs)."""
    model = _model(cfg)
    if not for_training:  # what follows matters to training only (hooks that act on it)
        return
    _training_needs(cfg, model)
    hooks = list(_hooks(cfg))
    for where, kind, args in hooks:
        if issubclass(kind, EarlyStoppingHook) and cfg.get("val_dataloader") is None:
            raise ConfigError(f"{where}: EarlyStoppingHook(monitor={args.get('monitor')!r}) "
                              "needs a val_dataloader: it decides after each validation")
    validates = cfg.get("val_dataloader") is not None or any(
        issubclass(kind, EvalHook) for _, kind, _ in hooks)
    for where, kind, args in hooks:
        if issubclass(kind, CheckpointHook) and args.get("save_best") is not None \
                and not validates:
            raise ConfigError(f"{where}.save_best={args['save_best']!r} keeps the checkpoint "
                              "with the best validation metric, but this run has no "
                              "validation: give val_dataloader (and metrics), or drop save_best")
    if model is None or hasattr(model, "validation_step"):
        return  # validation reports what the model's own step returns: unknown until it runs
    _metric_names(cfg, hooks)


def _model(cfg: Mapping) -> Any:
    """The model's class (or the model object), or None when the config does not say."""
    spec = cfg.get("model")
    if isinstance(spec, Mapping):
        return check_spec(MODELS, spec, "model") if "type" in spec else None
    return spec


def _training_needs(cfg: Mapping, model: Any) -> None:
    if cfg.get("train_dataloader") is None:
        raise ConfigError(f"training needs train_dataloader, e.g. train_dataloader: {_EXAMPLE_LOADER}")
    length = train_loop_config(cfg.get("train_loop"), max_epochs=cfg.get("max_epochs"),
                               max_iters=cfg.get("max_iters"), val_interval=cfg.get("val_interval"))
    if length is None:
        raise ConfigError("training needs max_epochs or max_iters (how long to train), "
                          "e.g. max_epochs: 10")
    if cfg.get("optimizer") is None and cfg.get("optim_wrapper") is None \
            and not hasattr(model, "train_step") and own_method(model, "configure_optimizers") is None:
        raise ConfigError("training needs an optimizer, e.g. optimizer: {type: Adam, lr: 0.001} "
                          "(or optim_wrapper: {optimizer: {...}, clip_grad: ...}, or a model "
                          "with configure_optimizers())")
    if cfg.get("loss_fn") is None and model is not None \
            and not any(hasattr(model, name) for name in ("training_step", "train_step")):
        raise ConfigError(f"training needs loss_fn: {getattr(model, '__name__', 'the model')} has "
                          "no training_step(batch), so the loss is loss_fn(model(x), y); e.g. "
                          "loss_fn: {type: CrossEntropyLoss}")


def _hooks(cfg: Mapping) -> Iterator[tuple[str, type, dict[str, Any]]]:
    """``(where, class, arguments)`` of each hook of ``cfg`` (configs and objects)."""
    entries: list[tuple[str, Any]] = []
    if isinstance(cfg.get("hooks"), (list, tuple)):
        entries += [(f"hooks[{i}]", spec) for i, spec in enumerate(cfg["hooks"])]
    if isinstance(cfg.get("default_hooks"), Mapping):
        entries += [(f"default_hooks.{key}", spec) for key, spec in cfg["default_hooks"].items()]
    for where, spec in entries:
        if isinstance(spec, Mapping) and isinstance(spec.get("type"), str):
            kind = check_spec(HOOKS, spec, where, ignore=("priority",))  # as built (_scope_ too)
            if isinstance(kind, type):  # a function registered as a hook builder is no class
                yield where, kind, spec_kwargs(spec, ignore=("priority",))
        elif spec is not None and not isinstance(spec, Mapping):
            yield where, type(spec), {name: getattr(spec, name, None)
                                      for name in ("monitor", "save_best", "metrics")}


def _metric_names(cfg: Mapping, hooks: list[tuple[str, type, dict[str, Any]]]) -> None:
    loss = {"loss"} if cfg.get("loss_fn") is not None else set()
    runner_metrics = reported_names(cfg.get("metrics"), loss)
    sources: list[tuple[str, Names]] = []  # every validation of the run, and its names
    if cfg.get("val_dataloader") is not None:
        sources.append(("validation", runner_metrics))
    for where, kind, args in hooks:
        if issubclass(kind, EvalHook):
            own = args.get("metrics")
            names = reported_names(own, loss) if isinstance(own, Mapping) else runner_metrics
            sources.append((f"{where} (validation)", names))
            if isinstance(args.get("save_best"), str) and args["save_best"] != "auto":
                check_named(args["save_best"], f"{where}.save_best", [(where, names)])
    for where, kind, args in hooks:
        if issubclass(kind, CheckpointHook) and isinstance(args.get("save_best"), str) \
                and args["save_best"] != "auto":
            check_named(args["save_best"], f"{where}.save_best", sources)
        if issubclass(kind, EarlyStoppingHook) and isinstance(args.get("monitor"), str):
            check_named(args["monitor"], f"{where}.monitor", sources, val_prefix=True)
    schedulers = cfg.get("param_scheduler")
    listed = isinstance(schedulers, list)
    items: list[Any] = schedulers if isinstance(schedulers, list) else [schedulers]
    for i, item in enumerate(items):
        if isinstance(item, Mapping) and item.get("type") == "ReduceLROnPlateau":
            where = f"param_scheduler[{i}]" if listed else "param_scheduler"
            check_named(item.get("monitor", "loss"), f"{where}.monitor", sources, val_prefix=True)

