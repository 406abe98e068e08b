"""What the training-curve plot draws, decided from ``metrics.jsonl`` alone (no matplotlib).

* :func:`read_metrics`: the records of a ``metrics.jsonl`` file.
* :func:`collect_series`: ``{key: {label: (xs, ys)}}``; the label is the
  record's ``mode``, plus the weights it was evaluated with when the record
  says (``"weights": "ema"`` becomes ``"val (EMA weights)"``).
* :func:`constant_value`: a key whose values are all the same (a fixed
  learning rate) gets a line of text instead of a panel.
* :func:`use_log_scale`: loss-like keys get a logarithmic y axis.

Example::

    >>> records = [{"mode": "train", "iter": i, "loss": 10.0 / i ** 2, "lr": 0.003}
    ...            for i in range(1, 11)]
    >>> records.append({"mode": "val", "iter": 10, "weights": "ema", "loss": 0.2})
    >>> series = collect_series(records)
    >>> sorted(series["loss"]), constant_value(series["lr"])
    (['train', 'val (EMA weights)'], 0.003)
    >>> use_log_scale("loss", series["loss"]), use_log_scale("lr", series["lr"])
    (True, False)
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hookline.core import ConfigError

#: a positive series spanning more than this many decades gets a log axis
LOG_DECADES = 1.5
#: record key naming the weights a validation/test record was computed with
WEIGHTS_KEY = "weights"
_WEIGHTS_NAMES = {"ema": "EMA", "swa": "SWA"}

Series = dict[str, tuple[list[float], list[float]]]


def read_metrics(metrics: str | os.PathLike | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` file (one JSON object per line), or the given dicts."""
    if isinstance(metrics, (str, os.PathLike)):
        path = Path(metrics)
        if not path.is_file():
            raise ConfigError(f"metrics file {str(path)!r} does not exist")
        records = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    raise ConfigError(f"{path}:{number} is not valid JSON: {err.msg}") from None
                if not isinstance(record, dict):
                    raise ConfigError(f"{path}:{number} is not a JSON object")
                records.append(record)
        return records
    return [dict(r) for r in metrics]


def is_number(value: Any) -> bool:
    """An int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def series_label(record: Mapping[str, Any]) -> str:
    """``"train"``, ``"val"``, ... or ``"val (EMA weights)"`` for a record with ``"weights": "ema"``."""
    mode = str(record.get("mode", "train"))
    weights = record.get(WEIGHTS_KEY)
    if isinstance(weights, str) and weights:
        return f"{mode} ({_WEIGHTS_NAMES.get(weights.lower(), weights)} weights)"
    return mode


def collect_series(records: Iterable[Mapping[str, Any]], x: str = "iter",
                   exclude: Iterable[str] = ("epoch",)) -> dict[str, Series]:
    """Every numeric key of ``records`` against ``x``: ``{key: {label: (xs, ys)}}``.

    A record without ``x`` (a validation record that only has ``"epoch"``,
    say) is placed at the last ``x`` seen before it.
    """
    skip = {x, "mode", WEIGHTS_KEY, *exclude}
    series: dict[str, Series] = {}
    last_x: float = 0
    for record in records:
        if is_number(record.get(x)):
            last_x = record[x]
        label = series_label(record)
        for key, value in record.items():
            if key not in skip and is_number(value):
                xs, ys = series.setdefault(key, {}).setdefault(label, ([], []))
                xs.append(last_x)
                ys.append(value)
    return series


def _values(by_label: Series) -> list[float]:
    return [float(v) for _xs, ys in by_label.values() for v in ys]


def constant_value(by_label: Series) -> float | None:
    """The value of a key that has at least two values, all equal (in every mode); else None."""
    values = _values(by_label)
    if len(values) < 2 or not math.isfinite(values[0]) or any(v != values[0] for v in values):
        return None
    return values[0]


def use_log_scale(key: str, by_label: Series, log_y: bool | None = None) -> bool:
    """Whether ``key``'s panel gets a log y axis.

    Never when a value is 0 or negative (or there is no finite value).
    Otherwise ``log_y`` decides when given; by default (None) loss-like keys
    get one: a name containing ``"loss"``, or values spanning more than
    :data:`LOG_DECADES` decades (max / min > 10 ** 1.5).
    """
    values = [v for v in _values(by_label) if not math.isnan(v)]
    finite = [v for v in values if math.isfinite(v)]
    if not finite or any(v <= 0 for v in values):
        return False
    if log_y is not None:
        return log_y
    return "loss" in key.lower() or max(finite) / min(finite) > 10 ** LOG_DECADES


def constants_note(constants: Mapping[str, float]) -> str:
    """``"constant: lr = 0.003, momentum = 0.9"`` (empty without constants)."""
    if not constants:
        return ""
    return "constant: " + ", ".join(f"{key} = {value:.6g}" for key, value in constants.items())
