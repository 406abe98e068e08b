"""A warning for hook methods that look like a stage but are none (a silent no-op otherwise).

``on_train_epoch_end`` (Lightning's name), ``after_epochs`` (a typo) or
``before_val_iteration`` are never called by the Runner. When a hook is
registered, each of its classes written outside hookline is checked once;
a public method named like a stage (``before_``/``after_``/``on_``) that
matches no stage gets one :class:`HookStageWarning` naming the closest one.

Example::

    >>> import warnings
    >>> from hookline import Hook
    >>> from hookline.engine.stage_lint import check_stage_names
    >>> class Late(Hook):
    ...     __module__ = "myproject.hooks"   # (hookline's own classes are not checked)
    ...     def on_train_epoch_end(self, runner):
    ...         pass
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_stage_names(Late())
    >>> "did you mean 'after_train_epoch'" in str(caught[0].message)
    True
"""

from __future__ import annotations

import difflib
import inspect
import warnings
import weakref
from types import FrameType
from typing import Any

from .hook import GENERIC_STAGES, STAGES

#: words that other frameworks (Lightning, Keras, mmcv) use for hookline's
_WORDS = {
    "iteration": "iter", "iterations": "iter", "iters": "iter", "step": "iter", "steps": "iter",
    "batch": "iter", "batches": "iter", "epochs": "epoch", "validation": "val", "valid": "val",
    "validate": "val", "eval": "val", "evaluation": "val", "training": "train", "fit": "train",
    "testing": "test", "runs": "run", "ckpt": "checkpoint",
}
_PREFIXES = ("before_", "after_", "on_")
_checked: weakref.WeakSet[type] = weakref.WeakSet()


class HookStageWarning(UserWarning):
    """A hook method is named like a stage but is none: the Runner never calls it."""


def normalise(name: str) -> str:
    """``on_validation_epoch_end`` -> ``after_val_epoch``: other frameworks' words in ours."""
    words = [_WORDS.get(word, word) for word in name.split("_")]
    if words and words[0] == "on" and len(words) > 1 and words[-1] in ("start", "begin", "end"):
        words = ["after" if words[-1] == "end" else "before", *words[1:-1]]
    return "_".join(words)


def _is_library(cls: type) -> bool:
    module = getattr(cls, "__module__", "") or ""
    return module == "hookline" or module.startswith("hookline.") or cls is object


def closest_stage(name: str, known: list[str]) -> str | None:
    """The stage (or known method) ``name`` most likely meant, or None when none is close."""
    target = normalise(name)
    if target in known:
        return target
    for prefix in ("before_", "after_"):  # before_epoch -> before_train_epoch (training's)
        if target.startswith(prefix) and f"{prefix}train_{target[len(prefix):]}" in known:
            return f"{prefix}train_{target[len(prefix):]}"
    close = difflib.get_close_matches(target, known, n=1, cutoff=0.82)
    return close[0] if close else None


def check_stage_names(hook: Any) -> None:
    """Warn once per class about methods of ``hook`` that look like stages but are none."""
    cls = type(hook)
    if cls in _checked:
        return
    _checked.add(cls)
    mro = cls.__mro__
    known = set(STAGES) | set(GENERIC_STAGES)
    for base in mro:
        if _is_library(base):
            known.update(vars(base))
        known.update(getattr(base, "stage_aliases", ()))
    # public stages only: never suggest a private method (Hook._before_epoch) to override
    candidates = sorted(n for n in known if n.startswith(_PREFIXES))
    for base in mro:
        if _is_library(base):
            continue
        for name, value in vars(base).items():
            if name in known or not name.startswith(_PREFIXES) or not callable(value):
                continue
            stage = closest_stage(name, candidates)
            if stage is None:
                continue
            code = getattr(value, "__code__", None)
            where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
            warnings.warn(
                f"{cls.__qualname__}.{name}{where} looks like a hook stage but is none, so the "
                f"Runner never calls it; did you mean {stage!r}? (stages: docs/engine.md)",
                HookStageWarning, stacklevel=_caller_level())


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside hookline: the warning points at the
    user's ``Runner(hooks=[...])`` or ``register_hook`` line, not at hookline's."""
    here = inspect.currentframe()  # this function: level 0; check_stage_names: 1
    frame: FrameType | None = here.f_back.f_back if here and here.f_back else None
    level = 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("hookline."):
        frame, level = frame.f_back, level + 1
    return level
