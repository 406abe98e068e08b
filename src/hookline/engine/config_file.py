"""Reading config files: YAML (1.2 numbers and booleans, duplicate keys refused) or JSON.

``hookline train`` and ``hookline.compat.mmengine.Config.fromfile`` read files
here, the same way: ``1e-3`` is a float, only ``true`` / ``false`` (also
``True``, ``TRUE``, ``False``, ``FALSE``) are booleans, as in YAML 1.2, so
``yes``, ``no``, ``on`` and ``off`` stay strings; a key given twice is a
:class:`ConfigError` (YAML merge keys ``<<:`` may be overridden), dates stay
strings, and a Python config is refused with what to write instead.

Example::

    >>> parse_value("1e-3"), parse_value("[1, 2]")
    (0.001, [1, 2])
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from hookline.core import ConfigError

__all__ = ["load_config", "parse_value"]


class _Loader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """Safe YAML with YAML 1.2 floats (``1e-3`` is a float, not a string) and booleans
    (``yes`` / ``no`` / ``on`` / ``off`` are strings), dates kept as strings (configs stay
    plain data) and duplicate keys refused."""


_BOOL_TAG = "tag:yaml.org,2002:bool"
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)
# YAML 1.1's booleans (yes, no, on, off ...) out; YAML 1.2 core's (true, false) in
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL_TAG]
    for first, resolvers in _Loader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                              list("tTfF"))
_Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _mapping_without_duplicates(loader: _Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    """A mapping whose own keys are all different; keys that a merge (``<<: *anchor``)
    brings in may be given again, and the mapping's own value wins (YAML's merge rule)."""
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise ConfigError(f"line {key_node.start_mark.line + 1}: a key must be a name or a "
                              f"number, got the {type(key).__name__} {key!r}")
        if key in seen:
            raise ConfigError(f"line {key_node.start_mark.line + 1}: key {key!r} appears twice")
        seen.add(key)
    loader.flatten_mapping(node)  # merged keys first, so the mapping's own keys win
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep=True)
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


def parse_value(text: str) -> Any:
    """A command-line value read as a YAML scalar or flow collection.

    Example::

        >>> [parse_value(v) for v in ("0.05", "1e-3", "10", "true", "null", "[1, 2]", "SGD")]
        [0.05, 0.001, 10, True, None, [1, 2], 'SGD']
        >>> [parse_value(v) for v in ("False", "no", "on")]  # YAML 1.2: only true/false
        [False, 'no', 'on']
    """
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        return text  # not YAML (e.g. "a: b: c"): the literal string


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a ``.yaml`` / ``.yml`` / ``.json`` config file into a dict.

    Example::

        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.yaml"
        >>> _ = path.write_text("model: {type: Net}\\nlr: 1e-3\\n", encoding="utf-8")
        >>> load_config(path)
        {'model': {'type': 'Net'}, 'lr': 0.001}
    """
    path = Path(path)
    if path.suffix.lower() == ".py":
        raise ConfigError(f"config file {str(path)!r} is a Python config, which hookline does not "
                          "run: write the same keys as a .yaml or .json file (model: {type: ...}, "
                          "train_dataloader: {...}, ...; see hookline docs cli)")
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise ConfigError(f"config file {str(path)!r} must end in .yaml, .yml or .json")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a UTF-8 byte-order mark is fine
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {str(path)!r} is not UTF-8 text (byte "
                          f"0x{exc.object[exc.start]:02x} at offset {exc.start}); save it as "
                          "UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {str(path)!r}: {exc}") from None
    if not text.strip():
        raise ConfigError(f"config file {str(path)!r} is empty; it must hold a mapping of Runner "
                          "arguments (model: {type: ...}, train_dataloader: {...}, ...)")
    cfg = _parse(path, text)
    if not isinstance(cfg, dict):
        raise ConfigError(f"{str(path)!r} must hold a mapping of Runner arguments, "
                          f"got {type(cfg).__name__}")
    return cfg


def _parse(path: Path, text: str) -> Any:
    """The data of a config file's ``text``: JSON for ``.json``, else YAML."""
    as_json = path.suffix.lower() == ".json"
    try:
        return json.loads(text, object_pairs_hook=_json_object) if as_json \
            else yaml.load(text, Loader=_Loader)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"cannot parse {str(path)!r} as JSON (a .json file must hold JSON; "
                          f"name a YAML file .yaml or .yml): {_one_line(exc)}") from None
    except (yaml.YAMLError, ConfigError) as exc:
        what = "JSON" if as_json else "YAML"
        raise ConfigError(f"cannot parse {str(path)!r} as {what}: {_one_line(exc)}") from None


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; a key given twice is a ConfigError, as in YAML (``json`` keeps the last)."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ConfigError(f"key {key!r} appears twice")
        seen[key] = value
    return seen


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
