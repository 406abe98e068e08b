"""CheckpointLoaderHook: load (pretrained) weights into the model before the run.

Accepts a hookline checkpoint, a plain ``torch.save(model.state_dict())``
file, or a dict holding a ``"state_dict"`` (mmcv, Lightning); always read
with ``torch.load(weights_only=True)``. Keys are rewritten with
``revise_keys`` (by default the ``module.`` prefix of DataParallel/DDP
models is dropped), and missing, unexpected and wrong-shape keys are
reported (raised with ``strict=True``).

Example::

    >>> import tempfile, torch
    >>> from hookline.hooks import CheckpointLoaderHook
    >>> path = f"{tempfile.mkdtemp()}/w.pth"
    >>> torch.save({"module.weight": torch.ones(1, 2), "module.bias": torch.zeros(1)}, path)
    >>> model = torch.nn.Linear(2, 1)
    >>> hook = CheckpointLoaderHook(path)
    >>> hook.load(model)
    ([], [])
    >>> model.weight.tolist()
    [[1.0, 1.0]]
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError
from hookline.engine.checkpoint import CheckpointError, load_checkpoint_file
from hookline.engine.checks import boolean
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

_LOG = logging.getLogger("hookline")


def read_weights(path: str | os.PathLike, map_location: Any = "cpu") -> dict[str, torch.Tensor]:
    """The model weights in ``path``: a hookline checkpoint's ``state_dict``, or a plain state dict.

    Raises :class:`CheckpointError` (naming the file and why) for anything else.
    """
    try:
        return dict(load_checkpoint_file(path, map_location, for_weights=True)["state_dict"])
    except CheckpointError as exc:
        if not exc.reason.startswith("not a hookline checkpoint"):
            raise
    try:
        obj = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # pragma: no cover - the first load read it already
        raise CheckpointError(path, f"{type(exc).__name__}: {exc}") from exc
    if isinstance(obj, Mapping) and isinstance(obj.get("state_dict"), Mapping):
        obj = obj["state_dict"]
    if not isinstance(obj, Mapping) or not obj or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()):
        what = type(obj).__name__ if not isinstance(obj, Mapping) else \
            f"a dict with keys {list(obj)[:6]}"
        raise CheckpointError(path, f"holds {what}, not a state dict (name -> tensor), a dict "
                                    "with a 'state_dict', or a hookline checkpoint")
    return dict(obj)


@HOOKS.register()
class CheckpointLoaderHook(Hook):
    """Loads weights from ``path`` into ``runner.model`` once, in ``before_run``.

    A resumed run (``resume=...``) then overwrites them with the resumed
    state, so the hook can stay in a config that is later resumed.

    Args:
        path: the weights file.
        strict: raise :class:`CheckpointError` when any key is missing,
            unexpected or of the wrong shape (False: load what matches and log
            the rest as a warning).
        map_location: passed to ``torch.load``.
        revise_keys: ``(regex, replacement)`` pairs applied in order to each key.

    After loading, ``missing_keys``, ``unexpected_keys`` and ``mismatched_keys``
    (``(key, checkpoint shape, model shape)``) say what did not match.
    """

    priority = "HIGH"

    def __init__(self, path: str | os.PathLike, strict: bool = False, map_location: Any = "cpu",
                 revise_keys: Sequence[tuple[str, str]] = ((r"^module\.", ""),)) -> None:
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise ConfigError(f"CheckpointLoaderHook path must be a file path, got {path!r}")
        revised = []
        for pair in revise_keys or ():
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ConfigError(f"revise_keys entries must be (regex, replacement) pairs, "
                                  f"got {pair!r}")
            try:
                revised.append((re.compile(pair[0]), str(pair[1])))
            except (re.error, TypeError) as exc:
                raise ConfigError(f"revise_keys pattern {pair[0]!r} is not a regex: {exc}") from exc
        self.path = Path(path)
        self.strict = boolean(strict, "strict", owner="CheckpointLoaderHook")
        self.map_location = map_location
        self.revise_keys = revised
        self.loaded = False
        self.missing_keys: list[str] = []
        self.unexpected_keys: list[str] = []
        self.mismatched_keys: list[tuple[str, tuple, tuple]] = []

    def before_run(self, runner: Runner) -> None:
        if not self.loaded:
            self.load(runner.model, runner.logger)

    def _revise(self, key: str) -> str:
        for pattern, replacement in self.revise_keys:
            key = pattern.sub(replacement, key)
        return key

    def load(self, model: torch.nn.Module, logger: logging.Logger | None = None
             ) -> tuple[list[str], list[str]]:
        """Load the file into ``model``; returns ``(missing_keys, unexpected_keys)``."""
        logger = logger or _LOG
        weights = {self._revise(k): v for k, v in read_weights(self.path, self.map_location).items()}
        own = model.state_dict()
        self.mismatched_keys = [(k, tuple(v.shape), tuple(own[k].shape)) for k, v in weights.items()
                                if k in own and v.shape != own[k].shape]
        for key, _, _ in self.mismatched_keys:
            del weights[key]
        self.missing_keys = sorted(set(own) - set(weights))
        self.unexpected_keys = sorted(set(weights) - set(own))
        problems = []
        if self.missing_keys:
            problems.append(f"missing keys {self.missing_keys}")
        if self.unexpected_keys:
            problems.append(f"unexpected keys {self.unexpected_keys}")
        if self.mismatched_keys:
            problems.append("wrong shapes " + ", ".join(
                f"{k} (checkpoint {list(a)}, model {list(b)})" for k, a, b in self.mismatched_keys))
        if problems and self.strict:
            raise CheckpointError(self.path, "strict=True and the weights do not match the "
                                             f"model: {'; '.join(problems)}")
        model.load_state_dict(weights, strict=False)
        self.loaded = True
        if problems:
            logger.warning("CheckpointLoaderHook: loaded %s with %s", self.path, "; ".join(problems))
        else:
            logger.info("CheckpointLoaderHook: loaded %s (%d tensors, all keys matched)",
                        self.path, len(weights))
        return self.missing_keys, self.unexpected_keys

    def __repr__(self) -> str:
        return f"CheckpointLoaderHook(path={str(self.path)!r}, strict={self.strict})"
