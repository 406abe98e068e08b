"""Checks one hook entry of a config: its type, its arguments' values, and what it names.

The built-in hooks validate their arguments in ``__init__`` and build
nothing there (no files, no threads, no model), so a built-in hook config is
checked by constructing the hook and dropping it: every value check the
hook has runs before the Runner exists. A hook class of your own is
never constructed here: its keys are matched against its signature, and a
``check_args`` classmethod or staticmethod taking the constructor's keyword
arguments runs when the class has one. Arguments that name other parts of
the run are checked too: an EvalHook's ``dataloader`` and ``metrics``, a
CheckpointLoaderHook's ``path`` (the file must exist).

Example::

    >>> from hookline.app.config_check.hooks import check_hook
    >>> check_hook({"type": "EMAHook", "decay": 2.0}, "hooks[0]")
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: hooks[0]: EMAHook decay must be a finite number in [0, 1], got 2.0
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hookline.core import ConfigError, Priority
from hookline.engine.config_target import run_check_args
from hookline.engine.registries import DATASETS, HOOKS
from hookline.engine.torch_args import check_dataloader

from .spec import check_spec, spec_kwargs

__all__ = ["check_hook", "is_builtin_hook", "is_refusal"]


def is_builtin_hook(target: Any) -> bool:
    """Whether ``target`` is one of hookline's hook classes, whose constructors only validate
    and store their arguments (tests/app/test_config_errors.py holds them to that)."""
    return isinstance(target, type) and target.__module__.startswith("hookline.hooks.")


def is_refusal(target: Any) -> bool:
    """Whether ``target`` is a stand-in of :mod:`hookline.compat.unsupported` for a hook the
    compat layers do not port: calling it only raises the error naming the alternative."""
    return callable(target) and not isinstance(target, type) \
        and getattr(target, "__module__", "") == "hookline.compat.unsupported"


def check_hook(spec: Any, where: str) -> None:
    """Check one hook entry: a ``{"type": ...}`` config or a hook object."""
    target = check_spec(HOOKS, spec, where, ignore=("priority",))
    if not isinstance(spec, Mapping):
        return
    if spec.get("priority") is not None:
        try:
            Priority.get(spec["priority"])
        except ConfigError as exc:
            raise ConfigError(f"{where}.priority: {exc}") from None
    kwargs = spec_kwargs(spec, ignore=("priority",))
    if is_refusal(target):  # an unported MMEngine hook: its stand-in raises the pointer
        _construct(target, kwargs, where)
    loader = kwargs.get("dataloader")
    if isinstance(loader, Mapping):  # EvalHook: checked like the Runner's val_dataloader
        if loader.get("dataset") is not None:
            check_spec(DATASETS, loader["dataset"], f"{where}.dataloader.dataset")
        check_dataloader(loader, f"{where}.dataloader", datasets=DATASETS)
    if not run_check_args(target, kwargs, where) and is_builtin_hook(target):
        _construct(target, kwargs, where)
    path = kwargs.get("path")
    if spec.get("type") == "CheckpointLoaderHook" and isinstance(path, (str, Path)) \
            and not Path(path).exists():
        raise ConfigError(f"{where}.path: checkpoint {str(path)!r} not found")


def _construct(target: Any, kwargs: Mapping[str, Any], where: str) -> None:
    try:
        target(**kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except Exception as exc:  # a value the hook's own code could not take
        name = getattr(target, "__name__", repr(target))
        raise ConfigError(f"{where}: {name} cannot take these arguments: "
                          f"{type(exc).__name__}: {' '.join(str(exc).split())}") from None
