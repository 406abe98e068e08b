"""Lightning's ``configure_optimizers()``: the run's optimizer and schedulers, from the model.

A Runner given neither ``optimizer=`` nor ``optim_wrapper=`` asks a model
that defines ``configure_optimizers()`` (a plain ``torch.nn.Module`` or a
``LightningModule``) for them, once, when the Runner is built. Every return
form of Lightning's is read:

* an optimizer, or a list / tuple of optimizers;
* ``{"optimizer": opt, "lr_scheduler": sched, "monitor": name}`` (the
  scheduler and the monitor optional);
* two lists, ``([opt, ...], [sched, ...])``;
* a list of such dicts;

where a scheduler may be a config dict ``{"scheduler": sched, "interval":
"epoch" | "step", "frequency": n, "monitor": name, "strict": True, "name": ...}``.
The optimizer is wrapped in an :class:`~hookline.engine.OptimWrapper`; the
schedulers become ``runner.param_schedulers`` entries, stepped by
``ParamSchedulerHook`` once per epoch (Lightning's default ``interval``) or
once per optimizer step (``"interval": "step"``), every ``frequency``-th
time. ``ReduceLROnPlateau`` steps after each validation on its ``monitor``,
looked up when the validation is over (``"val_loss"`` is the metric
``val_loss`` when validation gave one, e.g. from ``self.log``, else the
metric ``loss``). An ``optim_wrapper=`` config without ``"optimizer"``
(``{"clip_grad": {"max_norm": 1.0}}``, ``{"accumulative_counts": 4}``,
``{"type": "AmpOptimWrapper", "dtype": "bfloat16"}``) wraps the optimizer(s)
that ``configure_optimizers()`` returns, whose schedulers are kept; with an
``optimizer=`` or a full ``optim_wrapper=`` the method is not called (a
warning says so). Several optimizers need a model that updates them itself
(MMEngine's ``train_step(data, optim_wrapper)``): it gets an
``OptimWrapperDict`` keyed ``"0"``, ``"1"`` ...; automatic optimization steps
one optimizer. Anything else is a :class:`~hookline.core.ConfigError`.

Example::

    >>> import torch
    >>> class Net(torch.nn.Linear):
    ...     def configure_optimizers(self):
    ...         opt = torch.optim.SGD(self.parameters(), lr=0.1)
    ...         return {"optimizer": opt, "lr_scheduler": {
    ...             "scheduler": torch.optim.lr_scheduler.StepLR(opt, 1), "interval": "step"}}
    >>> wrapper, schedulers = optimization_from_model(Net(2, 1))
    >>> wrapper, [(type(s).__name__, by_epoch) for s, by_epoch in schedulers]
    (OptimWrapper(optimizer=SGD, accumulative_counts=1, clip_grad=None), [('StepLR', False)])
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.optim.lr_scheduler import ReduceLROnPlateau

from hookline.core import ConfigError

from .build import build_optim_wrapper
from .logs import current_logger
from .optim_wrapper import OptimWrapper, OptimWrapperLike
from .optim_wrapper_dict import OptimWrapperDict
from .registries import OPTIM_WRAPPERS
from .step import own_method

__all__ = ["ACCEPTED", "WRAPPER_OPTIONS", "EveryN", "build_optimization",
           "optimization_from_model", "read_optimizers", "scheduler_name",
           "wraps_model_optimizers"]

#: the return forms of ``configure_optimizers()``, for messages
ACCEPTED = ("an optimizer; a list or tuple of optimizers; {'optimizer': opt, 'lr_scheduler': "
            "sched, 'monitor': name} (lr_scheduler and monitor optional); ([opt, ...], "
            "[sched, ...]); or a list of such dicts; where a scheduler may be {'scheduler': "
            "sched, 'interval': 'epoch' | 'step', 'frequency': n, 'monitor': name}")
#: the keys of an ``optim_wrapper`` config that sets only how the optimizer is stepped
WRAPPER_OPTIONS = frozenset({"type", "clip_grad", "accumulative_counts", "loss_scale", "dtype",
                             "device_type"})
_OPTIMIZER_KEYS = {"optimizer", "lr_scheduler", "monitor"}
_SCHEDULER_KEYS = {"scheduler", "interval", "frequency", "monitor", "strict", "name",
                   "reduce_on_plateau"}


class EveryN:
    """Steps ``scheduler`` on every ``n``-th call (Lightning's ``frequency``); checkpointable.

    Example::

        >>> opt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=1.0)
        >>> every2 = EveryN(torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5), 2)
        >>> for _ in range(3):
        ...     opt.step()
        ...     every2.step()
        >>> opt.param_groups[0]["lr"]
        0.5
    """

    def __init__(self, scheduler: Any, n: int) -> None:
        self.scheduler = scheduler
        self.n = n
        self.calls = 0

    def step(self, *args: Any) -> None:
        self.calls += 1
        if self.calls % self.n == 0:
            self.scheduler.step(*args)

    def state_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "scheduler": self.scheduler.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls = int(state["calls"])
        self.scheduler.load_state_dict(state["scheduler"])

    def __getattr__(self, name: str) -> Any:  # get_last_lr, optimizer, last_epoch ...
        if name == "scheduler":
            raise AttributeError(name)
        return getattr(self.scheduler, name)

    def __repr__(self) -> str:
        return f"EveryN({type(self.scheduler).__name__}, n={self.n})"


def optimization_from_model(model: torch.nn.Module, wrapper_cfg: Mapping[str, Any] | None = None
                            ) -> tuple[OptimWrapperLike, list[tuple[Any, bool]]] | None:
    """The optimizer wrapper and ``(scheduler, by_epoch)`` pairs from
    ``model.configure_optimizers()``; None when the model defines no such method
    (a ``LightningModule``'s inherited stub does not count).

    ``wrapper_cfg`` (an ``optim_wrapper`` config without ``"optimizer"``, see
    :func:`wraps_model_optimizers`) says how each optimizer is wrapped: its type,
    ``clip_grad``, ``accumulative_counts``, ``dtype`` ...; none: a plain
    :class:`OptimWrapper`.
    """
    method = own_method(model, "configure_optimizers")
    if method is None:
        return None
    where = f"{type(model).__name__}.configure_optimizers()"
    result = _called(method, where)
    if result is None:
        raise ConfigError(f"{where} returned None: hookline trains with an optimizer; return "
                          f"one ({ACCEPTED}), or give the Runner optimizer= / optim_wrapper=")
    optimizers, schedulers = read_optimizers(result, where)
    wrappers = [_wrap(opt, wrapper_cfg) for opt in optimizers]
    wrapper: OptimWrapperLike
    if len(wrappers) == 1:
        wrapper = wrappers[0]
    elif hasattr(model, "train_step"):
        wrapper = OptimWrapperDict(**{str(i): w for i, w in enumerate(wrappers)})
    else:
        raise ConfigError(
            f"{where} returned {len(optimizers)} optimizers: hookline steps one optimizer per "
            "training step (Lightning's manual optimization is not supported); return one, or "
            "give the model MMEngine's train_step(data, optim_wrapper), which gets them as "
            "optim_wrapper['0'], optim_wrapper['1'] ... and updates them itself")
    entries = [_scheduler_entry(spec, monitor, optimizers, where) for spec, monitor in schedulers]
    return wrapper, entries


def _called(method: Any, where: str) -> Any:
    """``method()``, its error noted with why the Runner called it."""
    try:
        return method()
    except Exception as exc:
        add_note = getattr(exc, "add_note", None)
        if add_note is not None:
            add_note(f"hookline: raised in {where}, which the Runner calls when it is built "
                     "because no optimizer= was given and optim_wrapper= gives no optimizer "
                     "(self.trainer and self.log work there, as in Lightning)")
        raise


def _wrap(optimizer: torch.optim.Optimizer, wrapper_cfg: Mapping[str, Any] | None
          ) -> OptimWrapper:
    """``optimizer`` in the wrapper ``wrapper_cfg`` describes (a plain one for None)."""
    if wrapper_cfg is None:
        return OptimWrapper(optimizer)
    cfg = {"type": "OptimWrapper", **wrapper_cfg, "optimizer": optimizer}
    wrapper: OptimWrapper = OPTIM_WRAPPERS.build(cfg)
    return wrapper


def wraps_model_optimizers(optim_wrapper: Any) -> bool:
    """Whether ``optim_wrapper`` is a config of how to step an optimizer it does not name
    (no ``"optimizer"``, only :data:`WRAPPER_OPTIONS`, or a ``type`` other than
    ``OptimWrapperDict``): the one(s) ``configure_optimizers()`` returns.

    Example::

        >>> wraps_model_optimizers({"clip_grad": {"max_norm": 1.0}, "accumulative_counts": 2})
        True
        >>> wraps_model_optimizers({"encoder": {"optimizer": {"type": "SGD", "lr": 0.1}}})
        False
    """
    if not isinstance(optim_wrapper, Mapping) or "optimizer" in optim_wrapper \
            or not optim_wrapper:
        return False
    kind = optim_wrapper.get("type")
    if kind == "OptimWrapperDict" or "constructor" in optim_wrapper:  # builds its own
        return False
    return kind is not None or set(map(str, optim_wrapper)) <= WRAPPER_OPTIONS \
        or not all(isinstance(v, (Mapping, OptimWrapper)) for v in optim_wrapper.values())


def read_optimizers(result: Any, where: str = "configure_optimizers()"
                    ) -> tuple[list[torch.optim.Optimizer], list[tuple[Any, str | None]]]:
    """The optimizers and ``(scheduler or scheduler dict, top-level monitor)`` pairs of one
    ``configure_optimizers()`` result, in Lightning's order of reading the forms.

    Example::

        >>> opt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)
        >>> read_optimizers({"optimizer": opt, "monitor": "val_loss"})[1]
        []
        >>> read_optimizers("sgd")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: configure_optimizers() returned str 'sgd'; accepted: ...
    """
    def optimizer(obj: Any) -> bool:
        return isinstance(obj, torch.optim.Optimizer)

    if optimizer(result):
        return [result], []
    if isinstance(result, Mapping):
        return _from_dicts([result], where)
    if isinstance(result, (list, tuple)) and result:
        first = result[0]
        if len(result) == 2 and isinstance(first, (list, tuple)) and first \
                and all(optimizer(o) for o in first):
            scheds = result[1]
            scheds = list(scheds) if isinstance(scheds, (list, tuple)) else [scheds]
            return list(first), [(s, None) for s in scheds]
        if all(isinstance(d, Mapping) for d in result):
            return _from_dicts(result, where)
        if all(optimizer(o) for o in result):
            return list(result), []
    raise ConfigError(f"{where} returned {_describe(result)}; accepted: {ACCEPTED}")


def _from_dicts(dicts: Sequence[Mapping[str, Any]], where: str
                ) -> tuple[list[torch.optim.Optimizer], list[tuple[Any, str | None]]]:
    optimizers, schedulers = [], []
    for conf in dicts:
        unknown = sorted(set(map(str, conf)) - _OPTIMIZER_KEYS)
        if unknown or not isinstance(conf.get("optimizer"), torch.optim.Optimizer):
            problem = (f"unknown key(s) {unknown}" if unknown else
                       f"'optimizer' is {_describe(conf.get('optimizer'))}")
            raise ConfigError(f"{where} returned a dict whose {problem}; accepted keys: "
                              f"'optimizer' (a torch optimizer), 'lr_scheduler', 'monitor'; "
                              f"accepted forms: {ACCEPTED}")
        optimizers.append(conf["optimizer"])
        if conf.get("lr_scheduler") is not None:
            schedulers.append((conf["lr_scheduler"], conf.get("monitor")))
    return optimizers, schedulers


def _scheduler_entry(spec: Any, monitor: str | None, optimizers: list[torch.optim.Optimizer],
                     where: str) -> tuple[Any, bool]:
    conf: dict[str, Any] = dict(spec) if isinstance(spec, Mapping) else {"scheduler": spec}
    unknown = sorted(set(map(str, conf)) - _SCHEDULER_KEYS)
    if unknown:
        raise ConfigError(f"{where}: the lr scheduler dict has unknown key(s) {unknown}; "
                          f"accepted: {sorted(_SCHEDULER_KEYS)}")
    scheduler = conf.get("scheduler")
    if not all(callable(getattr(scheduler, m, None)) for m in ("step", "state_dict",
                                                                "load_state_dict")):
        raise ConfigError(f"{where}: a scheduler must be a torch.optim.lr_scheduler object (with "
                          f"step / state_dict / load_state_dict), got {_describe(scheduler)}")
    scheduled = getattr(scheduler, "optimizer", None)
    if scheduled is not None and not any(scheduled is opt for opt in optimizers):
        raise ConfigError(f"{where}: {type(scheduler).__name__} schedules an optimizer that "
                          "configure_optimizers() did not return")
    interval = conf.get("interval", "epoch")
    if interval not in ("epoch", "step"):
        raise ConfigError(f"{where}: 'interval' must be 'epoch' or 'step', got {interval!r}")
    frequency = conf.get("frequency", 1)
    if isinstance(frequency, bool) or not isinstance(frequency, int) or frequency < 1:
        raise ConfigError(f"{where}: 'frequency' must be a positive int, got {frequency!r}")
    name = conf.get("name")
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"{where}: 'name' must be a str (what LearningRateMonitor logs the "
                          f"learning rate as), got {_describe(name)}")
    if conf.get("strict", True) is not True:
        raise ConfigError(f"{where}: 'strict': False is not supported: a ReduceLROnPlateau "
                          "whose monitor is missing is an error in hookline")
    if isinstance(scheduler, ReduceLROnPlateau):
        monitor_name = conf.get("monitor", monitor)
        if not isinstance(monitor_name, str):
            raise ConfigError(f"{where}: ReduceLROnPlateau needs a monitor, e.g. {{'optimizer': "
                              "opt, 'lr_scheduler': {'scheduler': sched, 'monitor': 'val_loss'}}")
        if interval != "epoch" or frequency != 1:
            raise ConfigError(f"{where}: ReduceLROnPlateau steps after each validation in "
                              "hookline; 'interval': 'step' and 'frequency' are not supported")
        scheduler.monitor = monitor_name  # type: ignore[attr-defined]  # read after validation
        return _named(scheduler, name), True
    if frequency > 1:
        scheduler = EveryN(scheduler, frequency)
    return _named(scheduler, name), interval == "epoch"


#: the ``"name"`` a scheduler dict of ``configure_optimizers()`` gave, by scheduler (not in its
#: state dict: a checkpoint holds no more than before)
_NAMES: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _named(scheduler: Any, name: str | None) -> Any:
    if name is not None:
        _NAMES[scheduler] = name
    return scheduler


def scheduler_name(scheduler: Any) -> str | None:
    """The ``"name"`` ``configure_optimizers()`` gave ``scheduler`` (Lightning's
    ``LRSchedulerConfig.name``, what ``LearningRateMonitor`` logs under), or None.

    Example::

        >>> class Net(torch.nn.Linear):
        ...     def configure_optimizers(self):
        ...         opt = torch.optim.SGD(self.parameters(), lr=0.1)
        ...         return {"optimizer": opt, "lr_scheduler": {
        ...             "scheduler": torch.optim.lr_scheduler.StepLR(opt, 1), "name": "my_lr"}}
        >>> _, schedulers = optimization_from_model(Net(2, 1))
        >>> [scheduler_name(s) for s, _ in schedulers]
        ['my_lr']
    """
    try:
        return _NAMES.get(scheduler)
    except TypeError:  # not weak-referenceable: never named
        return None


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def build_optimization(optimizer: Any, optim_wrapper: Any, model: torch.nn.Module
                       ) -> tuple[OptimWrapperLike | None, list[tuple[Any, bool]]]:
    """The Runner's optimizer wrapper (:func:`~hookline.engine.build.build_optim_wrapper`)
    and the ``(scheduler, by_epoch)`` pairs that come with it: the model's
    ``configure_optimizers()`` ones when ``optimizer`` is not given and ``optim_wrapper``
    is none or names no optimizer (:func:`wraps_model_optimizers`: it then wraps the
    model's), else none (``param_scheduler`` adds its own).
    """
    if optimizer is None and (optim_wrapper is None or wraps_model_optimizers(optim_wrapper)):
        found = optimization_from_model(model, optim_wrapper)
        if found is not None:
            return found
        if optim_wrapper is not None:
            raise ConfigError(
                f"optim_wrapper has no 'optimizer' and {type(model).__name__} has no "
                "configure_optimizers() to give one: add it, e.g. {'type': 'OptimWrapper', "
                "'optimizer': {'type': 'SGD', 'lr': 0.01}, ...}")
    elif own_method(model, "configure_optimizers") is not None:
        _warn_unused(model, "optimizer=" if optimizer is not None else "optim_wrapper=")
    return build_optim_wrapper(optimizer, optim_wrapper, model), []


def _warn_unused(model: torch.nn.Module, given: str) -> None:
    """One warning: the Runner's ``given`` optimizer wins over ``configure_optimizers()``."""
    logger = current_logger()
    if logger is not None:
        logger.warning("%s.configure_optimizers() is not used: the Runner's %s gives the "
                       "optimizer (and its schedulers are left out); to keep them, give "
                       "optim_wrapper= without 'optimizer', e.g. {'clip_grad': {'max_norm': 1.0}}",
                       type(model).__name__, given)
