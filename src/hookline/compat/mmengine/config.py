"""``mmengine.config``: ``ConfigDict`` (attribute access) and ``Config``.

``runner.cfg`` is a :class:`ConfigDict`. ``Config`` here builds one from a
dict or a YAML/JSON file; MMEngine's Python config files (``_base_``
inheritance, ``lazy import``) are not read.

Example::

    >>> from hookline.compat.mmengine.config import Config
    >>> cfg = Config(dict(model=dict(type="ToyNet", depth=2)))
    >>> cfg.model.depth, cfg.pretty_text.startswith("{'model'")
    (2, True)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hookline.core import ConfigError
from hookline.engine.config_dict import ConfigDict


class Config(ConfigDict):
    """A :class:`ConfigDict` that can be read from a YAML or JSON file."""

    @classmethod
    def fromfile(cls, filename: str | Path, **kwargs: Any) -> Config:
        """Read a ``.yaml``/``.yml``/``.json`` config (Python configs are not supported)."""
        path = Path(filename)
        if path.suffix not in (".yaml", ".yml", ".json"):
            raise ConfigError(f"Config.fromfile reads YAML or JSON configs, not {path.name!r} "
                              "(MMEngine's Python configs are not supported)")
        import yaml  # noqa: PLC0415  (YAML is only needed here)

        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path} does not hold a mapping")
        return cls(data)

    @property
    def filename(self) -> None:
        """MMEngine's file name of the config; hookline's configs have none attached."""
        return None


__all__ = ["Config", "ConfigDict"]
