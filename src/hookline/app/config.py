"""Config files: YAML or JSON mapped onto the Runner's arguments, checked before anything is built.

A config's top-level keys are the :class:`~hookline.engine.Runner`'s keyword
arguments; ``model``, datasets, ``loss_fn``, ``optimizer``,
``param_scheduler``, metrics and hooks are ``{"type": ...}`` dicts resolved
through the registries (``MODELS``, ``DATASETS``, ``LOSSES``, ``OPTIMIZERS``,
``PARAM_SCHEDULERS``, ``METRICS``, ``HOOKS``). Two extra keys:
``custom_imports`` lists modules to import first (where your own classes
register themselves) and ``num_threads`` sets ``torch.set_num_threads``.
See docs/cli.md for the full format.

Example::

    >>> import tempfile
    >>> from hookline.app import build_runner
    >>> cfg = {"model": {"type": "DigitsCNN"}, "loss_fn": {"type": "CrossEntropyLoss"},
    ...        "optimizer": {"type": "Adam", "lr": 0.003}, "max_epochs": 1,
    ...        "train_dataloader": {"dataset": {"type": "DigitsDataset"}, "batch_size": 32}}
    >>> runner = build_runner(cfg, work_dir=tempfile.mkdtemp(), overrides=["optimizer.lr=1e-3"])
    >>> runner.optimizer.param_groups[0]["lr"], runner.config["optimizer"]["lr"]
    (0.001, 0.001)
    >>> build_runner({**cfg, "optimiser": {}})
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: unknown top-level config key 'optimiser'; did you mean ...
"""

from __future__ import annotations

import importlib
import inspect
import re
import traceback
from collections.abc import Mapping, Sequence
from contextlib import nullcontext, suppress
from pathlib import Path
from typing import Any

import torch
import yaml

from hookline.core import ConfigError
from hookline.core.registry import using_scope
from hookline.engine.config_file import load_config, parse_value
from hookline.engine.default_hooks import DEFAULT_HOOKS
from hookline.engine.metric_names import names_unchecked
from hookline.engine.runner import Runner

from .config_check import CONFIG_KEYS, validate_config
from .config_check.keys import config_scope
from .defaults import LEGACY_DEFAULT_HOOKS, register_builtins
from .run_dirs import RunFileWriteError

__all__ = ["CONFIG_ONLY_KEYS", "apply_overrides", "build_runner", "load_config", "resolve_config",
           "save_config", "validate_config"]

#: keys a config may hold besides the Runner's arguments (``experiment_name`` reaches the
#: Runner through its ``config``, where it reads it)
CONFIG_ONLY_KEYS = CONFIG_KEYS
#: file name of the resolved config in the work dir
SAVED_NAME = "config.yaml"


# -- overrides ---------------------------------------------------------------------------------------
_INDEX = re.compile(r"\[(-?\d+)\]")


def _split_path(key: str) -> list[str | int]:
    """``"hooks[0].interval"`` or ``"hooks.0.interval"`` -> ``["hooks", 0, "interval"]``."""
    parts: list[str | int] = []
    for piece in key.split("."):
        name, _, rest = piece.partition("[")
        if name:
            parts.append(int(name) if re.fullmatch(r"-?\d+", name) else name)
        elif not rest:
            raise ConfigError(f"--set key {key!r} has an empty part")
        if rest:
            indices = _INDEX.findall("[" + rest)
            if "".join(f"[{i}]" for i in indices) != "[" + rest:
                raise ConfigError(f"--set key {key!r}: write list indices as name[0] or name.0")
            parts += [int(i) for i in indices]
    return parts


def apply_overrides(cfg: Mapping, overrides: Sequence[str]) -> dict:
    """A copy of ``cfg`` with each ``"dotted.key=value"`` set (values parsed as YAML).

    Missing dict keys are created (``optimizer.weight_decay=1e-4``); list
    items are addressed as ``hooks[0].interval`` or ``hooks.0.interval``.

    Example::

        >>> apply_overrides({"optimizer": {"lr": 0.1}, "hooks": [{"type": "EMAHook"}]},
        ...                 ["optimizer.lr=1e-3", "hooks[0].momentum=0.01", "max_epochs=3"])
        {'optimizer': {'lr': 0.001}, 'hooks': [{'type': 'EMAHook', 'momentum': 0.01}], 'max_epochs': 3}
    """
    tree: dict = _copy_tree(cfg)
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set expects KEY=VALUE (e.g. optimizer.lr=0.05), got {item!r}")
        parts = _split_path(key)
        if not isinstance(parts[0], str):
            raise ConfigError(f"--set key {key!r} must start with a config key")
        node: Any = tree
        for depth, part in enumerate(parts[:-1]):
            node = _child(node, part, parts[depth + 1], key, create=True)
        _set(node, parts[-1], parse_value(raw.strip()), key)
    return tree


def _child(node: Any, part: str | int, next_part: str | int, key: str, create: bool) -> Any:
    if isinstance(node, dict):
        if node.get(str(part)) is None:
            if create and not isinstance(next_part, int):
                node[str(part)] = {}
            else:
                raise ConfigError(f"--set {key}: {part!r} is not set, so it has no item {next_part!r}")
        return node[str(part)]
    if isinstance(node, list):
        return node[_check_index(node, part, key)]
    raise ConfigError(f"--set {key}: cannot go into {part!r}, the value there is "
                      f"{type(node).__name__} {node!r}, not a mapping or a list")


def _set(node: Any, part: str | int, value: Any, key: str) -> None:
    if isinstance(node, dict):
        node[str(part)] = value
    elif isinstance(node, list):
        node[_check_index(node, part, key)] = value
    else:
        raise ConfigError(f"--set {key}: the value above {part!r} is {type(node).__name__} "
                          f"{node!r}, not a mapping or a list")


def _check_index(node: list, part: str | int, key: str) -> int:
    """``part`` when it is an index of ``node``."""
    if not isinstance(part, int) or not -len(node) <= part < len(node):
        raise ConfigError(f"--set {key}: {part!r} is not an index of a list of {len(node)} item(s)")
    return part


def _copy_tree(obj: Any) -> Any:
    """Dicts, lists and tuples copied (tuples become lists); other leaves shared."""
    if isinstance(obj, Mapping):
        return {k: _copy_tree(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_copy_tree(v) for v in obj]
    return obj


def _plain(obj: Any) -> Any:
    """Plain data for the saved config and checkpoint meta: objects become their repr."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, Path):
        return str(obj)
    return repr(obj)


# -- resolving and building --------------------------------------------------------------------------
def _import_custom(spec: Any) -> None:
    if spec is None:
        return
    allow_failed = False
    if isinstance(spec, Mapping):  # MMEngine's form: {imports: [...], allow_failed_imports: false}
        unknown = sorted(set(spec) - {"imports", "allow_failed_imports"})
        if unknown:
            raise ConfigError(f"custom_imports got unknown key(s) {unknown}; accepted: "
                              "imports, allow_failed_imports")
        allow_failed = bool(spec.get("allow_failed_imports", False))
        spec = spec.get("imports", [])
    names = [spec] if isinstance(spec, str) else spec
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"custom_imports must be a module name or a list of them, got {spec!r}")
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            if not allow_failed:
                raise ConfigError(f"custom_imports: cannot import {name!r}: {exc}") from None
        except SyntaxError as exc:  # the user's file: where, in one line
            raise ConfigError(f"custom_imports: {name!r} has a syntax error at {exc.filename}, "
                              f"line {exc.lineno}: {exc.msg}") from None
        except Exception as exc:  # raised by the module's own code while it was imported
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            raise ConfigError(f"custom_imports: importing {name!r} raised {type(exc).__name__}: "
                              f"{exc} ({frame.filename}, line {frame.lineno})") from None


def _fill_default_hooks(cfg: dict) -> None:
    """``default_hooks.logger: {interval: 5}`` without a ``type`` changes the default hook."""
    overrides = cfg.get("default_hooks")
    if not isinstance(overrides, dict):
        return
    known = {**DEFAULT_HOOKS, **LEGACY_DEFAULT_HOOKS}
    for key, spec in overrides.items():
        if isinstance(spec, dict) and "type" not in spec and key in known:
            overrides[key] = {**known[key], **spec}


def resolve_config(cfg: Mapping | str | Path, *, work_dir: str | Path | None = None,
                   resume: str | Path | None = None, overrides: Sequence[str] = (),
                   runner_cls: type[Runner] | None = None, for_training: bool = False) -> dict:
    """Load (when a path), apply ``overrides``, fill in ``work_dir`` / ``resume``, import
    ``custom_imports`` and validate: the dict :func:`build_runner` builds from.

    ``work_dir`` and ``resume`` given here win over the config's own.
    ``for_training`` also requires what training needs (``train_dataloader``,
    ``max_epochs`` or ``max_iters``, an optimizer, a loss); ``hookline train``
    sets it. Nothing is built and nothing is written (see docs/cli.md,
    "Checked before anything is built").

    Example::

        >>> cfg = resolve_config({"model": {"type": "DigitsCNN"}, "max_epochs": 2},
        ...                      overrides=["default_hooks.logger.interval=5"], work_dir="runs/a")
        >>> cfg["default_hooks"], cfg["work_dir"]
        ({'logger': {'type': 'LoggerHook', 'interval': 5}}, 'runs/a')
    """
    if isinstance(cfg, (str, Path)):
        cfg = load_config(cfg)
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"a config must be a dict or a path to a YAML/JSON file, got {cfg!r}")
    cfg = apply_overrides(cfg, overrides)
    if work_dir is not None:
        cfg["work_dir"] = str(work_dir)
    if resume is not None:
        cfg["resume"] = resume if isinstance(resume, bool) else str(resume)
    _fill_default_hooks(cfg)
    _import_custom(cfg.get("custom_imports"))
    register_builtins()
    with using_scope(config_scope(cfg)):
        validate_config(cfg, runner_arguments(runner_cls or Runner), for_training=for_training)
    return cfg


def runner_arguments(runner_cls: type[Runner]) -> list[str]:
    """The keyword arguments of ``runner_cls`` a config may set (all but ``config``)."""
    params = inspect.signature(runner_cls.__init__).parameters
    return [name for name, p in params.items() if name not in ("self", "config")
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def save_config(cfg: Mapping, path: str | Path) -> Path:
    """Write ``cfg`` (made plain) as YAML to ``path``; returns the path. A file that cannot
    be written (disk full, read-only folder) is a
    :class:`~hookline.app.run_dirs.RunFileWriteError` naming it; no temp file is left."""
    path = Path(path)
    text = yaml.safe_dump(_plain(cfg), sort_keys=False, default_flow_style=False)
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise RunFileWriteError.from_os_error(path, exc) from None
    return path


def build_runner(cfg: Mapping | str | Path, *, work_dir: str | Path | None = None,
                 resume: str | Path | None = None, overrides: Sequence[str] = (),
                 runner_cls: type[Runner] | None = None, for_training: bool = False,
                 save: bool = True) -> Runner:
    """Validate a config (dict or YAML/JSON path), build the Runner, save ``work_dir/config.yaml``
    (unless ``save`` is False: ``hookline train`` saves it once a resume went in).

    The whole config is checked (``for_training``: also what training needs,
    as ``hookline train`` asks) before the model or any data is built and
    before anything is written; the resolved config (overrides
    applied, ``work_dir`` filled in) goes to the Runner as ``config=`` and so
    into every checkpoint's ``meta``.
    """
    runner_cls = runner_cls or Runner
    cfg = resolve_config(cfg, work_dir=work_dir, resume=resume, overrides=overrides,
                         runner_cls=runner_cls, for_training=for_training)
    kwargs = {k: v for k, v in cfg.items() if k not in CONFIG_ONLY_KEYS}
    if cfg.get("num_threads") is not None:
        torch.set_num_threads(cfg["num_threads"])
    plain = _plain(cfg)
    # hookline test / val: save_best / monitor names are not checked (no training)
    unchecked = nullcontext() if for_training else names_unchecked()
    with using_scope(config_scope(cfg)), unchecked:  # MMEngine's init_default_scope
        runner = runner_cls(**kwargs, config=plain)
    config = runner.config  # the Runner's copy of ``plain``
    if config is not None and "work_dir" not in config:
        config["work_dir"] = str(runner.work_dir)
    if save and runner.is_main_process and config is not None:
        save_config(config, runner.work_dir / SAVED_NAME)
    return runner
