"""``metrics.jsonl``: one strict-JSON record a line, and its trimming when a run resumes.

Example::

    >>> import pathlib, tempfile
    >>> from hookline.hooks.metrics_file import json_line, trim_records
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "metrics.jsonl"
    >>> _ = path.write_text("".join(json_line({"iter": i, "loss": float("nan")}) for i in (1, 2, 3)))
    >>> trim_records(path, last_iter=2), path.read_text().splitlines()
    (1, ['{"iter": 1, "loss": null}', '{"iter": 2, "loss": null}'])
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path


def json_line(record: dict) -> str:
    """``record`` as one line of strict JSON (NaN and infinities become null), with its newline;
    a value JSON has no form for (a tensor, any object) is written as its ``repr``, so an odd
    metric value cannot stop the record writer."""
    return json.dumps(_json_safe(record), default=repr) + "\n"


def _json_safe(record: dict) -> dict:
    """NaN and infinities become null, so every line is strict JSON."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in record.items()}



def trim_records(path: Path, last_iter: int) -> int:
    """Drop the records of ``path`` (a metrics.jsonl) with ``iter > last_iter``, and a torn
    last line; rewrites the file atomically. Returns how many lines were dropped."""
    if not path.is_file():
        return 0
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = []
    for number, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines) - 1:
                continue  # a write cut short by the crash
            kept.append(line)
            continue
        if isinstance(record, dict) and isinstance(record.get("iter"), int) \
                and record["iter"] > last_iter:
            continue
        kept.append(line if line.endswith("\n") else line + "\n")
    dropped = len(lines) - len(kept)
    if dropped:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(kept), encoding="utf-8")
        os.replace(tmp, path)
    return dropped
