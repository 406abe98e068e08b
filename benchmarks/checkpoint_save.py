"""What the checksum costs one checkpoint save and load, of the demo model and of 100 MB.

Trains the demo config (``hookline/demo/config.yaml``: DigitsCNN, Adam) for
one epoch so that the optimizer state is filled in, serialises its
checkpoint, and times, interleaved (A, B, A, B, ...) in one process so that a
busy machine slows both alike:

* write: the write path without the checksum (what hookline did before:
  temp file, fsync, rename, fsync the folder, then the ``latest`` pointer)
  against ``write_checkpoint`` (the same, with the sha256 sealed into the
  file);
* load: ``load_checkpoint_file(verify=False)`` against
  ``load_checkpoint_file`` (which first re-hashes the file);
* the same for a 100 MB checkpoint (one float32 tensor of 25M values);
* ``runner.save_checkpoint(path)`` end to end (collect, serialise, write).

Each figure is the median and the min of ``--repeat`` timings, in
milliseconds; the sha256 of the payload alone is timed too.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/checkpoint_save.py [--repeat 41]
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from _machine import cpu_model
from hookline.app import build_runner, load_config
from hookline.demo.registry import demo_config_path
from hookline.engine.checkpoint import (
    atomic_write,
    collect,
    load_checkpoint_file,
    make_meta,
    serialize,
    write_checkpoint,
    write_latest,
)


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, tuple[float, float]]:
    """(median, min) milliseconds of each of ``fns``, called in turn ``repeat`` times."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1e3)
    return {name: (statistics.median(t), min(t)) for name, t in times.items()}


def unsealed_write(path: Path, payload: bytes) -> None:
    """The write path as it was before the checksum: the same file, without the seal."""
    atomic_write(path, lambda stream: stream.write(payload))
    write_latest(path.parent, path.name)


def compare(label: str, payload: bytes, folder: Path, repeat: int) -> list[tuple[str, int, tuple]]:
    path = folder / f"{label}.pth"
    write_checkpoint(path, payload)
    size = path.stat().st_size
    writes = interleaved({"write, no checksum": lambda: unsealed_write(path, payload),
                          "write_checkpoint (checksum)": lambda: write_checkpoint(path, payload)},
                         repeat)
    write_checkpoint(path, payload)
    loads = interleaved({"load, no verification": lambda: load_checkpoint_file(path, verify=False),
                         "load_checkpoint_file (verified)": lambda: load_checkpoint_file(path)},
                        repeat)
    digest = interleaved({"sha256 of the payload": lambda: hashlib.sha256(payload).digest()},
                         repeat)
    return [(f"{label}: {name}", size, figures)
            for part in (writes, loads, digest) for name, figures in part.items()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=41)
    args = parser.parse_args()
    torch.set_num_threads(1)
    work_dir = Path(tempfile.mkdtemp(prefix="hookline-ckpt-bench-"))
    cfg = load_config(demo_config_path())
    cfg.update(max_epochs=1, default_hooks={"logger": None, "progress": None, "checkpoint": None})
    runner = build_runner(cfg, work_dir=work_dir)
    runner.logger.setLevel(logging.WARNING)
    runner.train()
    demo = serialize(collect(runner))
    big = serialize({"meta": make_meta(0, 0), "state_dict": {"w": torch.randn(25_000_000)}})
    rows = compare("demo", demo, work_dir, args.repeat)
    rows += compare("100 MB", big, work_dir, max(5, args.repeat // 4))
    save = interleaved({"save": lambda: runner.save_checkpoint(work_dir / "save.pth")},
                       args.repeat)["save"]
    rows.append(("demo: runner.save_checkpoint", (work_dir / "save.pth").stat().st_size, save))
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} torch thread(s); "
          f"work dir {work_dir}")
    print(f"{'what':<44} {'bytes':>11} {'median ms':>10} {'min ms':>8}")
    for name, nbytes, (median, best) in rows:
        print(f"{name:<44} {nbytes:>11,} {median:>10.3f} {best:>8.3f}")


if __name__ == "__main__":
    main()
