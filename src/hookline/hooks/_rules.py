"""Which way a metric improves, inferred from its name like MMEngine does.

MMEngine's rule, on the whole key (case-insensitive): the key is one of the
greater or less keys; else a greater key is part of it; else a less key is.
hookline's lists add recall, f1, psnr, ssim (greater) and error, err, mse,
mae, perplexity (less) to MMEngine's.

Example::

    >>> from hookline.hooks._rules import infer_rule, is_better
    >>> infer_rule("val/accuracy"), infer_rule("loss"), infer_rule("loss/total")
    ('greater', 'less', 'less')
    >>> infer_rule("acc/mean"), infer_rule("mAP/bbox"), infer_rule("precision/cls_0")
    ('greater', 'greater', 'greater')
    >>> is_better(0.9, 0.8, "greater", min_delta=0.05)
    True
"""

from __future__ import annotations

import math
from typing import Any

from hookline.core import ConfigError
from hookline.core.errors import closest_names
from hookline.engine.metrics import returns_one_number

GREATER_KEYS = ("acc", "top", "ar@", "auc", "precision", "recall", "f1", "map", "mdice",
                "miou", "macc", "aacc", "psnr", "ssim")
LESS_KEYS = ("loss", "error", "err", "mse", "mae", "perplexity")


def infer_rule(key: str, rule: str | None = None) -> str:
    """``rule`` when given ("greater" or "less"), else inferred from ``key``."""
    if rule is not None:
        if rule not in ("greater", "less"):
            raise ConfigError(f"rule must be 'greater' or 'less', got {rule!r}")
        return rule
    name = key.lower()  # the whole key, as MMEngine's CheckpointHook matches it
    for keys, inferred in ((GREATER_KEYS, "greater"), (LESS_KEYS, "less")):
        if name in keys:
            return inferred
    for keys, inferred in ((GREATER_KEYS, "greater"), (LESS_KEYS, "less")):
        if any(k in name for k in keys):
            return inferred
    typo = closest_names(name, ("accuracy", "precision", "recall", "loss", "error"))
    hint = f"is it a typo of {typo[0]!r}? If not, " if typo else ""
    raise ConfigError(
        f"cannot infer whether {key!r} should be greater or less: {hint}pass rule='greater' or "
        f"rule='less' (inferred greater for names containing {', '.join(GREATER_KEYS)}; "
        f"less for {', '.join(LESS_KEYS)})")


def is_better(value: float, best: float | None, rule: str, min_delta: float = 0.0) -> bool:
    """True when ``value`` beats ``best`` by more than ``min_delta`` under ``rule``."""
    if math.isnan(value):
        return False
    if best is None:
        return True
    return value > best + min_delta if rule == "greater" else value < best - min_delta


def warn_if_misspelled(runner: Any, name: str, owner: str) -> None:
    """Before training: one warning when ``name`` (a ``save_best`` / ``monitor``) is not a
    metric the run's validation is known to report but is close to one (a typo would
    otherwise stop the run after its first validation). Names are known when the model has
    no validation step of its own and every metric is known to return one number (the
    built-in ``accuracy`` and ``mse``): their names and ``loss``. Any other metric may
    return a dict of names known only once it ran (``accuracy/top1`` from a metric named
    ``accuracy``), and the name is left to the validation.

        >>> import logging
        >>> from types import SimpleNamespace
        >>> from hookline.engine.metrics import accuracy
        >>> runner = SimpleNamespace(metrics={"accuracy": accuracy}, model=object(),
        ...                          logger=logging.getLogger("doc"))
        >>> warn_if_misspelled(runner, "accuracy", "CheckpointHook save_best")  # known: quiet
    """
    model = getattr(runner, "model", None)
    if any(callable(getattr(model, step, None)) for step in ("validation_step", "val_step")):
        return
    metrics = getattr(runner, "metrics", None) or {}
    known = [*metrics, "loss"]
    bare = name[4:] if name.startswith(("val/", "val_")) else name
    if name in known or bare in known:  # "val/acc" may be a metric's own name
        return
    if not all(returns_one_number(metric) for metric in metrics.values()):
        return  # a metric may report it: the first validation tells
    close = closest_names(bare, known, n=1)
    if close:
        runner.logger.warning(
            "%s=%r is not a metric this run's validation reports (%s); did you mean %r? "
            "(the run stops with an error after its first validation otherwise)",
            owner, name, ", ".join(known), close[0])
