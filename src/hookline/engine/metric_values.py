"""What a metric returns, made into what hooks, the log and ``val()`` get: plain numbers
and lists (:func:`plain_value`), one number or not (:func:`is_scalar`), and one result dict
whose keys each come from one metric (:func:`add_result`).

Example::

    >>> results, sources = {}, {}
    >>> add_result(results, sources, "acc", torch.tensor(0.5))
    >>> add_result(results, sources, "cls", {"top1": 0.25, "skipped": None})
    >>> results
    {'acc': 0.5, 'top1': 0.25}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from hookline.core import ConfigError

__all__ = ["STEP_SOURCE", "add_result", "is_scalar", "plain_value"]

#: who reported a key that the step's outputs averaged (see add_result)
STEP_SOURCE = "the validation/test step's outputs (averaged over the samples)"


def add_result(results: dict[str, Any], sources: dict[str, str], name: str, value: Any
                ) -> None:
    """Add what metric ``name`` returned to ``results``: a dict under its own keys, anything
    else under ``name``; ``None`` (and a dict's ``None`` entries) left out. A key already
    reported (by another metric, or by the step's averaged outputs) is a :class:`ConfigError`
    naming both, as MMEngine's Evaluator raises."""
    entries = ({str(k): v for k, v in value.items()} if isinstance(value, Mapping)
               else {name: value})
    for key, entry in entries.items():
        if entry is None:  # MMEngine's DumpResults and friends report nothing
            continue
        if key in results:
            other = sources[key]
            clash = (f"metric {name!r} reports {key!r}, which {other} already report"
                     if other == STEP_SOURCE else
                     f"metrics {other!r} and {name!r} both report {key!r}")
            example = f"{name}/{key}" if isinstance(value, Mapping) else f"val_{key}"
            raise ConfigError(
                f"{clash}: each key of a validation/test result must come from one place "
                f"(MMEngine's Evaluator refuses metrics without distinct prefixes too); "
                f"rename the metric or have it report the value under another key, e.g. "
                f"{example!r}")
        results[key] = plain_value(entry)
        sources[key] = name


def plain_value(value: Any) -> Any:
    """A metric's value as hooks, the log and ``val()`` get it: Python numbers stay (a bool
    becomes an int), a one-element tensor or NumPy array becomes its number (an int for an
    integer dtype), a larger one a nested list; lists, tuples and dicts are made plain
    entry by entry; strings and any other object stay as they are.

        >>> import numpy as np
        >>> plain_value(torch.tensor(3)), plain_value(np.float32(0.5)), plain_value(True)
        (3, 0.5, 1)
        >>> plain_value({"per_class": torch.tensor([0.5, 1.0]), "name": "x"})
        {'per_class': [0.5, 1.0], 'name': 'x'}
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, torch.Tensor):
        value = value.detach()
        if value.numel() == 1:
            number = value.reshape(()).item()
            return int(number) if isinstance(number, bool) else number
        return value.cpu().tolist()
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        listed = value.tolist()  # a NumPy scalar gives its number, an array a nested list
        if getattr(value, "size", 0) == 1 and isinstance(listed, list):
            listed = value.reshape(()).tolist()
        return plain_value(listed) if isinstance(listed, (bool, list)) else listed
    if isinstance(value, Mapping):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return value


def is_scalar(value: Any) -> bool:
    """Whether a (plain) metric value is one number: what the message hub records, loggers
    plot and ``save_best`` / ``monitor`` can track.

        >>> is_scalar(0.5), is_scalar(3), is_scalar([0.5]), is_scalar("0.5"), is_scalar(True)
        (True, True, False, False, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool)
