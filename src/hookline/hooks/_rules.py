"""Which way a metric improves, inferred from its name like MMEngine does.

Example::

    >>> from hookline.hooks._rules import infer_rule, is_better
    >>> infer_rule("val/accuracy"), infer_rule("loss")
    ('greater', 'less')
    >>> is_better(0.9, 0.8, "greater", min_delta=0.05)
    True
"""

from __future__ import annotations

import math

from hookline.core import ConfigError

GREATER_KEYS = ("acc", "top", "ar@", "auc", "precision", "recall", "f1", "map", "mdice",
                "miou", "macc", "aacc", "psnr", "ssim")
LESS_KEYS = ("loss", "error", "err", "mse", "mae", "perplexity")


def infer_rule(key: str, rule: str | None = None) -> str:
    """``rule`` when given ("greater" or "less"), else inferred from ``key``."""
    if rule is not None:
        if rule not in ("greater", "less"):
            raise ConfigError(f"rule must be 'greater' or 'less', got {rule!r}")
        return rule
    name = key.lower().rsplit("/", 1)[-1]
    for keys, inferred in ((GREATER_KEYS, "greater"), (LESS_KEYS, "less")):
        if name in keys:
            return inferred
    for keys, inferred in ((GREATER_KEYS, "greater"), (LESS_KEYS, "less")):
        if any(k in name for k in keys):
            return inferred
    raise ConfigError(
        f"cannot infer whether {key!r} should be greater or less: pass rule='greater' or "
        f"rule='less' (inferred greater for names containing {', '.join(GREATER_KEYS)}; "
        f"less for {', '.join(LESS_KEYS)})")


def is_better(value: float, best: float | None, rule: str, min_delta: float = 0.0) -> bool:
    """True when ``value`` beats ``best`` by more than ``min_delta`` under ``rule``."""
    if math.isnan(value):
        return False
    if best is None:
        return True
    return value > best + min_delta if rule == "greater" else value < best - min_delta
