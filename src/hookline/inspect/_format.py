"""A plain text table for the report() of the inspect tools."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def cell(value: Any) -> str:
    """Format one value: floats in 4 significant digits, None as ``-``."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> str:
    """Left-aligned first column, right-aligned others, with rules around the header."""
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(header)]

    def line(values: Sequence[str]) -> str:
        parts = [values[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(values[1:], widths[1:])]
        return "  ".join(parts).rstrip()

    rule = "-" * (sum(widths) + 2 * (len(widths) - 1))
    lines = ([title] if title else []) + [line(list(header)), rule] + [line(r) for r in cells]
    return "\n".join(lines)
