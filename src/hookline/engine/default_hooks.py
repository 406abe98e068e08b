"""The default hook set: the hooks every Runner has unless ``default_hooks`` says otherwise.

The set is data (registry names and arguments): the Runner builds each hook
through ``HOOKS``, so the engine never imports ``hookline.hooks``. Optimization
is not among them: ``runner.optim_wrapper`` does it.

Example::

    >>> from hookline.engine.default_hooks import default_hook_specs
    >>> specs = default_hook_specs({"logger": {"interval": 5}, "progress": None})
    >>> specs["logger"], "progress" in specs
    ({'type': 'LoggerHook', 'interval': 5}, False)
    >>> default_hook_specs({"progres": None})
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: unknown default_hooks key 'progres'; did you mean 'progress'? ...
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hookline.core import ConfigError
from hookline.core.errors import closest_names

from .hook import Hook

#: key -> hook config, in registration order
DEFAULT_HOOKS: dict[str, dict[str, Any]] = {
    "param_scheduler": {"type": "ParamSchedulerHook"},
    "timer": {"type": "IterTimerHook"},
    "logger": {"type": "LoggerHook"},
    "checkpoint": {"type": "CheckpointHook", "interval": 1},
    "sampler_seed": {"type": "DistSamplerSeedHook"},
    "progress": {"type": "ProgressBarHook"},
}

#: ``default_hooks`` keys of hookline 0.1 that are no longer defaults but still accepted
#: without a ``type``: ``default_hooks.optimizer: {grad_clip: ...}`` configures the
#: optimizer wrapper through mmcv's OptimizerHook; ``optimizer: None`` removes nothing.
LEGACY_DEFAULT_HOOKS: dict[str, dict[str, Any]] = {"optimizer": {"type": "OptimizerHook"}}


def check_default_hooks(overrides: Any) -> None:
    """Raise :class:`ConfigError` for a ``default_hooks`` argument the Runner cannot use.

    ``None`` may only remove a hook that is there (a typo such as ``progres:
    null`` would silently remove nothing), a config without ``type`` may only
    change a default hook, and every other value is a hook or a hook config
    (a new key adds a hook, as in MMEngine).
    """
    if overrides is None:
        return
    if not isinstance(overrides, Mapping):
        raise ConfigError("default_hooks must map keys to hook configs, hooks or None, e.g. "
                          f"{{'logger': {{'interval': 5}}, 'progress': None}}; got {overrides!r}")
    known = [*DEFAULT_HOOKS, *LEGACY_DEFAULT_HOOKS]
    for key, value in overrides.items():
        if value is None and key not in known:
            raise ConfigError(f"unknown default_hooks key {key!r}{_suggest(key)} (None / null "
                              f"removes a default hook; their keys: {', '.join(DEFAULT_HOOKS)})")
        if isinstance(value, Mapping) and "type" not in value and key not in known:
            raise ConfigError(f"default_hooks.{key} has no 'type' and {key!r} is not a default "
                              f"hook key{_suggest(key)} (only the default hooks can leave "
                              f"'type' out: {', '.join(DEFAULT_HOOKS)})")
        if value is not None and not isinstance(value, (Mapping, Hook)):
            raise ConfigError(f"default_hooks.{key} must be a hook config, a Hook or None "
                              f"(to remove it), got {value!r}")


def _suggest(key: Any) -> str:
    close = closest_names(str(key), DEFAULT_HOOKS, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def default_hook_specs(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The default hooks with ``overrides`` applied (MMEngine's ``default_hooks``).

    A key set to None removes that hook; a dict without ``type`` changes the
    arguments of a default hook (``{"logger": {"interval": 5}}``); anything
    else (a config with ``type``, a hook instance) replaces it or adds a new key.
    """
    check_default_hooks(overrides)
    specs: dict[str, Any] = dict(DEFAULT_HOOKS)
    known = {**DEFAULT_HOOKS, **LEGACY_DEFAULT_HOOKS}
    for key, value in (overrides or {}).items():
        if isinstance(value, Mapping) and "type" not in value and key in known:
            value = {**known[key], **value}
        specs[key] = value
    return {key: spec for key, spec in specs.items() if spec is not None}


def duplicated_default(hook: Hook, defaults: Mapping[str, Hook]) -> str | None:
    """The ``default_hooks`` key of a default hook that ``hook`` does the same job as
    (one is an instance of the other's class), or None.

    A ported config that lists its own ``CheckpointHook`` or ``TextLoggerHook``
    next to the defaults runs both: two checkpoints per epoch, every log line
    twice. The Runner warns when such a hook is added::

        >>> class Saver(Hook): ...
        >>> class PortedSaver(Saver): ...   # a ported CheckpointHook, say
        >>> class Lines(Hook): ...
        >>> duplicated_default(PortedSaver(), {"logger": Lines(), "checkpoint": Saver()})
        'checkpoint'
    """
    for key, default in defaults.items():
        if default is hook or type(default) is Hook or type(hook) is Hook:
            continue
        if isinstance(hook, type(default)) or isinstance(default, type(hook)):
            return key
    return None
