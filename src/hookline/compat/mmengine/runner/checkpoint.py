"""``mmengine.runner.checkpoint``: loading weights into a module, as MMEngine does.

Files are read with ``torch.load(weights_only=True)`` (hookline's loader:
a truncated or unusable file is a ``CheckpointError`` naming it). An MMEngine
training checkpoint, whose message hub holds MMEngine's own classes, gives its
weights too: those objects are skipped (never imported or run), with a warning.

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.runner import load_state_dict
    >>> net = torch.nn.Linear(2, 1)
    >>> result = load_state_dict(net, {"weight": torch.ones(1, 2), "bias": torch.zeros(1)})
    >>> net.weight.sum().item(), result.missing_keys
    (2.0, [])
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from hookline.engine.checkpoint import (
    CheckpointError,
    load_checkpoint_file,
    read_latest,
    save_atomic,
)
from hookline.engine.checkpoint.atomic import LATEST_FILENAME

from ..logging import print_log
from ..model import is_model_wrapper


def load_state_dict(module: torch.nn.Module, state_dict: Mapping[str, Any], strict: bool = False,
                    logger: logging.Logger | str | None = None) -> Any:
    """Load ``state_dict`` into ``module`` (unwrapped from DDP); mismatched keys are logged,
    and with ``strict`` raised. Returns torch's ``(missing_keys, unexpected_keys)``."""
    target: Any = module.module if is_model_wrapper(module) else module
    result = target.load_state_dict(dict(state_dict), strict=strict)
    if result.missing_keys or result.unexpected_keys:
        print_log(f"load_state_dict: missing keys {result.missing_keys}, unexpected keys "
                  f"{result.unexpected_keys}", logger=logger or "current", level=logging.WARNING)
    return result


def _revise(state_dict: Mapping[str, Any], revise_keys: Sequence[tuple[str, str]]
            ) -> dict[str, Any]:
    revised = dict(state_dict)
    for pattern, replacement in revise_keys:
        revised = OrderedDict((re.sub(pattern, replacement, k), v) for k, v in revised.items())
    return revised


def load_checkpoint(model: torch.nn.Module, filename: str | Path,
                    map_location: str | torch.device | None = None, strict: bool = False,
                    logger: logging.Logger | str | None = None,
                    revise_keys: Sequence[tuple[str, str]] = ((r"^module\.", ""),)) -> dict[str, Any]:
    """Load the weights of ``filename`` (a hookline, MMEngine or mmcv checkpoint, or a bare
    state dict) into ``model``; returns the checkpoint dict (objects of MMEngine's classes in
    it, which are not loaded, are :class:`~hookline.engine.checkpoint.foreign.ForeignObject`
    placeholders)."""
    checkpoint = _read(filename, map_location or "cpu",
                       logger if isinstance(logger, logging.Logger) else None)
    state = checkpoint.get("state_dict", checkpoint)
    load_state_dict(model, _revise(state, revise_keys), strict=strict, logger=logger)
    return checkpoint


def _read(filename: str | Path, map_location: Any, logger: logging.Logger | None = None
          ) -> dict[str, Any]:
    """A checkpoint with a ``state_dict`` (hookline's, MMEngine's with its message hub
    skipped, mmcv's), or any ``torch.save`` dict ``weights_only`` accepts (a bare state dict);
    everything else is a ``CheckpointError`` naming the file."""
    try:
        checkpoint: dict[str, Any] = load_checkpoint_file(filename, map_location=map_location,
                                                          for_weights=True, logger=logger)
        return checkpoint
    except CheckpointError as exc:
        if not exc.reason.startswith("not a hookline checkpoint"):
            raise
    try:
        loaded = torch.load(filename, map_location=map_location, weights_only=True)
    except Exception as exc:  # pragma: no cover - the first load read it already
        raise CheckpointError(filename, f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(loaded, dict):
        raise CheckpointError(filename, f"holds a {type(loaded).__name__}, not a dict")
    return loaded


def weights_to_cpu(state_dict: Mapping[str, Any]) -> dict[str, Any]:
    """The same dict with every tensor on the CPU."""
    return OrderedDict((k, v.cpu() if isinstance(v, torch.Tensor) else v)
                       for k, v in state_dict.items())


def get_state_dict(module: torch.nn.Module) -> dict[str, Any]:
    """``module``'s state dict, unwrapped from DDP."""
    target: Any = module.module if is_model_wrapper(module) else module
    state: dict[str, Any] = target.state_dict()
    return state


def save_checkpoint(checkpoint: Mapping[str, Any], filename: str | Path) -> None:
    """Write ``checkpoint`` atomically (hookline's writer; tensors and plain containers only)."""
    save_atomic(dict(checkpoint), filename)


def find_latest_checkpoint(path: str | Path) -> str | None:
    """The newest checkpoint of the folder ``path``, as its pointer file names it: hookline's
    ``latest`` or MMEngine's ``last_checkpoint`` (the one written last when both are there);
    None, logged as MMEngine does, without either. The file named is not opened.

    Example::

        >>> import tempfile
        >>> from pathlib import Path
        >>> from hookline.engine.checkpoint import write_latest
        >>> import contextlib, io
        >>> folder = tempfile.mkdtemp()
        >>> with contextlib.redirect_stdout(io.StringIO()):  # the log line, where one is shown
        ...     found = find_latest_checkpoint(folder)
        >>> found is None
        True
        >>> _ = write_latest(folder, "epoch_2.pth")
        >>> Path(find_latest_checkpoint(folder)).name
        'epoch_2.pth'
    """
    folder = Path(path)
    pointers = [p for p in (folder / LATEST_FILENAME, folder / "last_checkpoint") if p.is_file()]
    for pointer in sorted(pointers, key=lambda p: p.stat().st_mtime_ns, reverse=True):
        if pointer.name == LATEST_FILENAME:
            found = read_latest(folder)
        else:
            text = pointer.read_text(encoding="utf-8").strip()
            found = Path(text) if text else None
        if found is not None:
            return str(found)
    print_log(f"Did not find a 'latest' or 'last_checkpoint' pointer in {str(path)!r} to "
              "be resumed.", logger="current")
    return None


__all__ = ["find_latest_checkpoint", "get_state_dict", "load_checkpoint", "load_state_dict",
           "save_checkpoint", "weights_to_cpu"]
