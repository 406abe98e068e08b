"""``ConfigDict``: a dict whose keys are also attributes (``runner.cfg.train_dataloader.dataset``).

Nested dicts become ``ConfigDict`` s too, so a hook written for MMEngine can
read, deep-copy and edit a config the way it does there.

Example::

    >>> import copy
    >>> from hookline.engine.config_dict import ConfigDict
    >>> cfg = ConfigDict({"train_dataloader": {"batch_size": 8, "dataset": {"type": "Toy"}}})
    >>> loader = copy.deepcopy(cfg.train_dataloader)
    >>> loader.dataset.pipeline = ["flip"]
    >>> loader.to_dict(), cfg.train_dataloader.dataset.to_dict()
    ({'batch_size': 8, 'dataset': {'type': 'Toy', 'pipeline': ['flip']}}, {'type': 'Toy'})
"""

from __future__ import annotations

import pprint
from collections.abc import Mapping
from typing import Any


def _wrap(value: Any) -> Any:
    if isinstance(value, Mapping) and not isinstance(value, ConfigDict):
        return ConfigDict(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


class ConfigDict(dict[str, Any]):
    """A dict with attribute access; nested dicts (also in lists) are ``ConfigDict`` s.

    Dict methods (``items``, ``get``, ``copy`` ...) win over keys of the same
    name for attribute access; ``cfg["items"]`` always reads the key.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, _wrap(value))

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"config has no key {name!r}; keys: {sorted(self)}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def copy(self) -> ConfigDict:
        return ConfigDict(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain dicts all the way down."""
        result: dict[str, Any] = _plain(self)
        return result

    @property
    def pretty_text(self) -> str:
        """The config as readable text (MMEngine's ``Config.pretty_text``)."""
        return pprint.pformat(self.to_dict(), sort_dicts=False)

    def __repr__(self) -> str:
        return f"ConfigDict({dict.__repr__(self)})"


def plain_arguments(**arguments: Any) -> dict[str, Any]:
    """The arguments that are plain data (dicts, lists, numbers, strings), for ``runner.cfg``.

    Example::

        >>> plain_arguments(seed=0, model=object(), optimizer={"type": "SGD", "lr": 0.1})
        {'seed': 0, 'optimizer': {'type': 'SGD', 'lr': 0.1}}
    """
    def plain(value: Any) -> bool:
        if isinstance(value, Mapping):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return all(plain(v) for v in value)
        return value is None or isinstance(value, (str, int, float, bool))

    return {key: value for key, value in arguments.items()
            if value is not None and plain(value)}
