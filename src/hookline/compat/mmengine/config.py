"""``mmengine.config``: ``ConfigDict`` (attribute access) and ``Config``.

``runner.cfg`` is a :class:`ConfigDict`. ``Config`` here builds one from a
dict or a YAML/JSON file, read as ``hookline train`` reads it (YAML 1.2
numbers, duplicate keys refused); MMEngine's Python config files and
``_base_`` inheritance are refused with a :class:`ConfigError`.

Example::

    >>> from hookline.compat.mmengine.config import Config
    >>> cfg = Config(dict(model=dict(type="ToyNet", depth=2)))
    >>> cfg.model.depth, cfg.pretty_text
    (2, "model = dict(type='ToyNet', depth=2)")
    >>> cfg.merge_from_dict({"model.depth": 50, "optimizer.lr": 0.01})
    >>> cfg.model.depth, cfg.optimizer.lr
    (50, 0.01)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from hookline.core import ConfigError
from hookline.engine.config_dict import ConfigDict
from hookline.engine.config_file import load_config
from hookline.engine.visualizer import config_text

#: keyword arguments of MMEngine's ``Config.fromfile``; they concern Python configs only
_FROMFILE_OPTIONS = ("use_predefined_variables", "import_custom_modules",
                     "use_environment_variables", "lazy_import", "format_python_code")


class Config(ConfigDict):
    """A :class:`ConfigDict` that can be read from (and written to) a YAML or JSON file."""

    @classmethod
    def fromfile(cls, filename: str | Path, **kwargs: Any) -> Config:
        """Read a ``.yaml``/``.yml``/``.json`` config with hookline's config reader.

        MMEngine's keyword arguments (``import_custom_modules`` ...) are accepted
        and concern Python configs only; any other is a :class:`ConfigError`.
        """
        unknown = sorted(set(kwargs) - set(_FROMFILE_OPTIONS))
        if unknown:
            raise ConfigError(f"Config.fromfile got unexpected argument(s) {unknown}; "
                              f"accepted: filename, {', '.join(_FROMFILE_OPTIONS)}")
        path = Path(filename)
        if path.suffix.lower() not in (".yaml", ".yml", ".json"):
            raise ConfigError(f"Config.fromfile reads YAML or JSON configs, not {path.name!r} "
                              "(MMEngine's Python configs are not supported: write the same "
                              "keys as a .yaml or .json file)")
        data = load_config(path)
        if "_base_" in data:
            raise ConfigError(f"{path}: _base_ (MMEngine's config inheritance) is not supported: "
                              "write the whole config in one file (YAML anchors and <<: merge "
                              "keys share parts within it)")
        return cls(data)

    def merge_from_dict(self, options: Mapping[str, Any], allow_list_keys: bool = True) -> None:
        """Set each dotted key of ``options`` (``{"model.depth": 50}``), as MMEngine's
        ``--cfg-options`` do: missing dicts are created, a dict value merges into the dict
        that is there, and with ``allow_list_keys`` an integer part indexes a list
        (``"hooks.0.interval"``)."""
        if not isinstance(options, Mapping):
            raise ConfigError(f"merge_from_dict takes a dict of dotted keys, got {options!r}")
        for key, value in options.items():
            if not isinstance(key, str) or not key or "" in key.split("."):
                raise ConfigError(f"merge_from_dict: {key!r} is not a dotted key such as "
                                  "'model.depth'")
            parts = key.split(".")
            node: Any = self
            for part in parts[:-1]:
                node = _step(node, part, key, allow_list_keys)
            _merge_into(node, parts[-1], value, key, allow_list_keys)

    def dump(self, file: str | Path | None = None) -> str | None:
        """The config as YAML text (``file`` None), or written to ``file`` (``.yaml``/``.yml``
        as YAML, ``.json`` as JSON) and None."""
        data = self.to_dict()
        if file is None:
            return str(yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
        path = Path(file)
        suffix = path.suffix.lower()
        if suffix not in (".yaml", ".yml", ".json"):
            raise ConfigError(f"Config.dump writes .yaml, .yml or .json files, not {path.name!r}")
        text = json.dumps(data, indent=2) + "\n" if suffix == ".json" else \
            yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
        path.write_text(text, encoding="utf-8")
        return None

    @property
    def pretty_text(self) -> str:
        """The config as Python config text, MMEngine's style: ``a = 1`` / ``b = dict(c=2)``."""
        return config_text(self.to_dict())

    @property
    def filename(self) -> None:
        """MMEngine's file name of the config; hookline's configs have none attached."""
        return None


def _step(node: Any, part: str, key: str, allow_list_keys: bool) -> Any:
    """The child ``part`` of ``node`` on the way to ``key`` (a missing dict is made)."""
    if isinstance(node, list):
        return node[_index(node, part, key, allow_list_keys)]
    if not isinstance(node, dict):
        raise ConfigError(f"merge_from_dict {key!r}: cannot go into {part!r}, the value above "
                          f"it is {node!r}")
    if part not in node:
        node[part] = {}
    return node[part]


def _merge_into(node: Any, part: str, value: Any, key: str, allow_list_keys: bool) -> None:
    """Set ``node[part]``: a dict value over a dict merges key by key, anything else replaces."""
    if isinstance(node, list):
        node[_index(node, part, key, allow_list_keys)] = value
        return
    if not isinstance(node, dict):
        raise ConfigError(f"merge_from_dict {key!r}: the value above {part!r} is {node!r}, "
                          "not a dict")
    if isinstance(value, Mapping) and isinstance(node.get(part), dict):
        for name, item in value.items():
            _merge_into(node[part], str(name), item, key, allow_list_keys)
    else:
        node[part] = value


def _index(node: list[Any], part: str, key: str, allow_list_keys: bool) -> int:
    """``part`` as an index of the list ``node``."""
    if not allow_list_keys:
        raise ConfigError(f"merge_from_dict {key!r}: {part!r} is in a list; pass "
                          "allow_list_keys=True to index lists")
    if not part.lstrip("-").isdigit() or not -len(node) <= int(part) < len(node):
        raise ConfigError(f"merge_from_dict {key!r}: {part!r} is not an index of a list of "
                          f"{len(node)} item(s)")
    return int(part)


__all__ = ["Config", "ConfigDict"]
