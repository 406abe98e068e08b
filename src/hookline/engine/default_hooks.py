"""The default hook set: the hooks every Runner has unless ``default_hooks`` says otherwise.

The set is data (registry names and arguments): the Runner builds each hook
through ``HOOKS``, so the engine never imports ``hookline.hooks``. Optimization
is not among them: ``runner.optim_wrapper`` does it.

Example::

    >>> from hookline.engine.default_hooks import default_hook_specs
    >>> specs = default_hook_specs({"logger": {"interval": 5}, "progress": None})
    >>> specs["logger"], "progress" in specs
    ({'type': 'LoggerHook', 'interval': 5}, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: key -> hook config, in registration order
DEFAULT_HOOKS: dict[str, dict[str, Any]] = {
    "param_scheduler": {"type": "ParamSchedulerHook"},
    "timer": {"type": "IterTimerHook"},
    "logger": {"type": "LoggerHook"},
    "checkpoint": {"type": "CheckpointHook", "interval": 1},
    "sampler_seed": {"type": "DistSamplerSeedHook"},
    "progress": {"type": "ProgressBarHook"},
}


def default_hook_specs(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The default hooks with ``overrides`` applied (MMEngine's ``default_hooks``).

    A key set to None removes that hook; a dict without ``type`` changes the
    arguments of a default hook (``{"logger": {"interval": 5}}``); anything
    else (a config with ``type``, a hook instance) replaces it or adds a new key.
    """
    specs: dict[str, Any] = dict(DEFAULT_HOOKS)
    for key, value in (overrides or {}).items():
        if isinstance(value, Mapping) and "type" not in value and key in DEFAULT_HOOKS:
            value = {**DEFAULT_HOOKS[key], **value}
        specs[key] = value
    return {key: spec for key, spec in specs.items() if spec is not None}
