"""The config of a Runner's train loop, from its ``train_loop``, ``max_epochs``,
``max_iters`` and ``val_interval`` arguments (MMEngine's ``train_cfg``).

Example::

    >>> train_loop_config(None, max_epochs=None, max_iters=500, val_interval=100)
    {'type': 'IterBasedTrainLoop', 'max_iters': 500, 'val_interval': 100}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hookline.core import ConfigError

__all__ = ["train_loop_config"]


def train_loop_config(train_loop: str | Mapping[str, Any] | None, *, max_epochs: int | None,
                      max_iters: int | None, val_interval: int | None) -> dict[str, Any] | None:
    """The ``LOOPS`` config of a Runner's train loop, or None when it has no length.

    ``train_loop`` (a loop name or a config, like MMEngine's ``train_cfg``) may
    hold ``max_epochs`` / ``max_iters`` / ``val_interval`` itself; the
    Runner's arguments of the same name fill in what it leaves out, and the
    same key given twice with different values is a :class:`ConfigError`.

    Example::

        >>> train_loop_config({"type": "EpochBasedTrainLoop", "val_interval": 2},
        ...                   max_epochs=12, max_iters=None, val_interval=None)
        {'type': 'EpochBasedTrainLoop', 'val_interval': 2, 'max_epochs': 12}
    """
    if train_loop is not None and not isinstance(train_loop, (str, Mapping)):
        raise ConfigError(f"train_loop must be a LOOPS name or a config dict, got {train_loop!r}")
    cfg: dict[str, Any] = dict(train_loop) if isinstance(train_loop, Mapping) else \
        {"type": train_loop}
    if "dynamic_intervals" in cfg:
        raise ConfigError(
            f"train_loop dynamic_intervals={cfg['dynamic_intervals']!r} (MMEngine's list of "
            "(milestone, interval)) is not supported by hookline: validation runs every "
            "val_interval. To change the interval during training, set it from a hook, e.g. "
            "@runner.on('before_train_epoch'): if runner.epoch + 1 >= milestone: "
            "runner.train_loop.val_interval = interval (the loop and CheckpointHook read it "
            "at every epoch's end)")
    for key, value in (("max_epochs", max_epochs), ("max_iters", max_iters),
                       ("val_interval", val_interval)):
        if value is None:
            continue
        if cfg.get(key, value) != value:
            raise ConfigError(f"{key} is {value!r} for the Runner and {cfg[key]!r} in train_loop: "
                              "give it once")
        cfg[key] = value
    if "by_epoch" in cfg:
        _pick_by_epoch(cfg)
    if "max_epochs" in cfg and "max_iters" in cfg:
        raise ConfigError("give max_epochs or max_iters, not both")
    if "max_epochs" not in cfg and "max_iters" not in cfg:
        return None
    if cfg.get("type") is None:
        cfg["type"] = "EpochBasedTrainLoop" if "max_epochs" in cfg else "IterBasedTrainLoop"
    return cfg


def _pick_by_epoch(cfg: dict[str, Any]) -> None:
    """MMEngine's ``train_cfg=dict(by_epoch=True, max_epochs=12)``: ``by_epoch`` picks the
    loop type (when the config names none, as MMEngine's Runner reads it) and is taken out."""
    by_epoch = cfg.pop("by_epoch")
    if not isinstance(by_epoch, bool):
        raise ConfigError(f"train_loop.by_epoch must be true or false, got {by_epoch!r}")
    kind = "EpochBasedTrainLoop" if by_epoch else "IterBasedTrainLoop"
    if cfg.get("type") is not None and cfg["type"] != kind:
        raise ConfigError(f"train_loop.by_epoch={by_epoch} picks {kind} (MMEngine's train_cfg "
                          f"without a type), and the config names {cfg['type']!r}: drop one")
    length = "max_epochs" if by_epoch else "max_iters"
    other = "max_iters" if by_epoch else "max_epochs"
    if other in cfg and length not in cfg:
        raise ConfigError(f"train_loop.by_epoch={by_epoch} counts the run in {length}, and "
                          f"it gives {other}={cfg[other]!r}: give {length}, or by_epoch="
                          f"{not by_epoch}")
    cfg["type"] = cfg.get("type") or kind
