"""Checks a whole config before anything is built: one :class:`ConfigError` for the first problem.

Nothing of the run exists while a config is checked, and nothing is written:

- every ``{"type": ...}`` entry is looked up in its registry and its keys
  are matched against the constructor's signature, with suggestions
  (:mod:`.spec`);
- optimizer, scheduler, loss, optimizer-wrapper and dataloader configs are
  checked value by value and built on dummies, so torch's own checks run
  (:mod:`hookline.engine.torch_args`); a model or dataset class runs its
  ``check_args`` if it has one (:mod:`.keys`);
- each built-in hook is constructed from its config and dropped, so every
  value check in its ``__init__`` runs (:mod:`.hooks`);
- what one part needs from another: metric names used by ``save_best`` /
  ``monitor``, EarlyStopping's ``val_dataloader``, and for training the
  dataloader, length, optimizer and loss (:mod:`.run`);
- the device exists here and the work dir can be created and written.

Example::

    >>> import hookline.demo.registry  # registers the demo's DigitsCNN
    >>> from hookline.app.config_check import validate_config
    >>> validate_config({"model": {"type": "DigitsCNN"},
    ...                  "hooks": [{"type": "CheckpointHook", "intervl": 2}]},
    ...                 ["model", "hooks"])
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: hooks[0]: hook type 'CheckpointHook' got unexpected argument(s) ...
    >>> validate_config({"model": {"type": "DigitsCNN"}}, ["model", "train_dataloader"],
    ...                 for_training=True)
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: training needs train_dataloader, e.g. train_dataloader: ...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hookline.core import ConfigError
from hookline.engine.arguments import FOREIGN_ARGUMENTS
from hookline.engine.registries import MODELS

from .keys import CHECKS
from .run import check_run
from .spec import check_spec

__all__ = ["CONFIG_KEYS", "MMENGINE_KEYS", "check_spec", "validate_config"]

#: keys a config may hold besides the Runner's arguments
CONFIG_KEYS = ("custom_imports", "num_threads", "default_scope", "experiment_name")

# MMEngine config keys and what hookline calls them
MMENGINE_KEYS = {
    "custom_hooks": "hooks",
    "train_cfg": "max_epochs / max_iters and val_interval (and train_loop for a loop class)",
    "val_evaluator": "metrics",
    "test_evaluator": "test_metrics (by default the test loop uses metrics)",
    "val_cfg": "val_loop (e.g. val_loop: {fp16: true}; validation runs from val_dataloader)",
    "test_cfg": "test_loop (e.g. test_loop: {fp16: true}; test() runs test_dataloader)",
    "randomness": "seed",
    "param_schedulers": "param_scheduler",
}

#: MMEngine config keys hookline has no counterpart for -> what to do instead (keys the
#: Runner refuses too are in hookline.engine.arguments' table, shared with Runner(...))
MMENGINE_POINTERS = {
    "log_processor": "log lines come from default_hooks.logger (LoggerHook: interval, by_epoch), "
                     "which averages each value over its interval",
    "log_level": "hookline logs at INFO to the terminal and log.txt; remove the key",
    "visualizer": "scalars go to metrics.jsonl and curves.png, and runner.visualizer exists for "
                  "hooks; remove the key (hookline hooks lists the logging hooks)",
    "auto_scale_lr": "no automatic LR scaling: set optimizer.lr for your total batch size "
                     "(lr x batch size / base_batch_size, MMEngine's rule), e.g. with --set",
    "_base_": "config inheritance is not supported: write the whole config in one YAML/JSON "
              "file (YAML anchors and <<: merge keys share parts within it) and change values "
              "with --set",
}


def _foreign_key(key: str) -> ConfigError | None:
    """The error for an MMEngine (or other framework's) top-level key, naming what to write
    instead; None for any other key."""
    if key in MMENGINE_KEYS:
        return ConfigError(f"unknown top-level config key {key!r}: hookline's name for MMEngine's "
                           f"{key} is {MMENGINE_KEYS[key]}")
    if key in MMENGINE_POINTERS:
        return ConfigError(f"top-level config key {key!r} is MMEngine's, not hookline's: "
                           f"{MMENGINE_POINTERS[key]}")
    if key in FOREIGN_ARGUMENTS:  # the Runner's own table: the two paths say the same
        return ConfigError(f"top-level config key {key!r} is not a hookline Runner argument; "
                           f"instead: {FOREIGN_ARGUMENTS[key]}")
    return None


def validate_config(cfg: Mapping, accepted: Sequence[str], *, for_training: bool = False) -> None:
    """Raise :class:`ConfigError` for the first problem in ``cfg``; ``accepted`` are the
    Runner's argument names (:data:`CONFIG_KEYS` are always accepted);
    ``for_training`` also requires what ``runner.train()`` needs."""
    allowed = [*accepted, *CONFIG_KEYS]
    for key in cfg:
        if key in allowed:
            continue
        foreign = _foreign_key(key)
        if foreign is not None:
            raise foreign
        raise ConfigError.unknown("top-level config key", key, allowed)
    if "model" in allowed and "model" not in cfg:
        raise ConfigError("the config has no 'model'; e.g. model: {type: DigitsCNN} "
                          f"(registered models: {', '.join(MODELS.names()) or 'none'})")
    for key, check in CHECKS.items():
        if key in cfg:
            check(cfg[key], key, cfg)
    check_run(cfg, for_training=for_training)
