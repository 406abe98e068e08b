"""What the ``hookline`` subcommands share: the CONFIG / ``--set`` / ``--work-dir`` arguments.

``hookline train``, ``test``, ``val`` and ``hooks`` read a config the same
way (the packaged demo when CONFIG is left out, ``--set`` overrides applied)
and agree on the work dir: ``--work-dir``, else the config's ``work_dir``,
else ``work_dirs/<config file name>``.

Example::

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_config_arguments(parser, "the run to train")
    >>> add_work_dir_argument(parser, "where runs go")
    >>> args = parser.parse_args(["--set", "max_epochs=2"])
    >>> cfg, name = load_command_config(args)
    >>> name, cfg["max_epochs"], str(work_dir_of(args, cfg, name))
    ('demo', 2, 'work_dirs/demo')
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from hookline.core import ConfigError
from hookline.demo.registry import demo_config_path

from .config import apply_overrides, load_config

__all__ = ["DEFAULT_WORK_DIRS", "add_config_arguments", "add_work_dir_argument",
           "load_command_config", "work_dir_of"]

#: the folder that holds the work dirs of configs that name none
DEFAULT_WORK_DIRS = Path("work_dirs")


def add_config_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    """Add the optional CONFIG and the repeatable ``--set KEY=VALUE``."""
    parser.add_argument("config", nargs="?", default=None, metavar="CONFIG",
                        help=f"a YAML or JSON config file; {what}")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="override a config value: dotted keys, list items as hooks[0].interval, "
                             "values read as YAML (e.g. --set optimizer.lr=0.05 --set "
                             "default_hooks.progress=null); repeatable")
    parser.add_argument("--cfg-options", nargs="*", action=_CfgOptions, help=argparse.SUPPRESS)


class _CfgOptions(argparse.Action):
    """MMEngine's ``--cfg-options``: an argparse error naming hookline's ``--set``."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        parser.error("--cfg-options is MMEngine's; hookline's is --set KEY=VALUE, once per "
                     "value (e.g. --set optimizer.lr=0.05 --set max_epochs=20)")


def add_work_dir_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--work-dir DIR``."""
    parser.add_argument("--work-dir", default=None, metavar="DIR",
                        help=f"{what} (default: the config's work_dir, else "
                             "work_dirs/<config name>)")


def load_command_config(args: argparse.Namespace) -> tuple[dict, str]:
    """The config (overrides applied) and the name of the run (``demo`` without CONFIG)."""
    if args.config is None:
        return apply_overrides(load_config(demo_config_path()), args.overrides), "demo"
    return apply_overrides(load_config(args.config), args.overrides), Path(args.config).stem


def work_dir_of(args: argparse.Namespace, cfg: dict, name: str) -> Path:
    """``--work-dir``, else the config's ``work_dir``, else ``work_dirs/<name>``; an empty
    one is a :class:`ConfigError` (it would silently mean the default)."""
    given = getattr(args, "work_dir", None)
    for value, what in ((given, "--work-dir"), (cfg.get("work_dir"), "the config's work_dir")):
        if isinstance(value, str) and not value.strip():
            raise ConfigError(f"{what} is empty; give a folder path (e.g. --work-dir "
                              f"work_dirs/{name}), or leave it out for work_dirs/<config name>")
    chosen = given or cfg.get("work_dir") or DEFAULT_WORK_DIRS / name
    if not isinstance(chosen, (str, os.PathLike)):
        raise ConfigError(f"work_dir must be a folder path (a string), got {chosen!r}")
    return Path(chosen)
