"""What one checkpoint save and load of the demo model cost (and a 100 MB one).

Trains the demo config (``hookline/demo/config.yaml``: DigitsCNN, Adam) for
one epoch so that the optimizer state is filled in, then times, in the
foreground:

* ``runner.save_checkpoint(path)``: collect the state, serialise it, write it
  atomically (temp file, fsync, rename, fsync the folder) with its checksum,
  and the ``latest`` pointer;
* ``load_checkpoint_file(path)``: read it back with ``weights_only=True``,
  verifying the checksum;
* the same write and load of a 100 MB checkpoint (one float32 tensor of 25M
  values), where the checksum's share is larger.

Each figure is the median and the min of ``--repeat`` timings, in
milliseconds. The checksum itself (sha256 of the payload) is also timed on its
own, so its share of a save can be read off directly.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/checkpoint_save.py [--repeat 21]
"""

from __future__ import annotations

import argparse
import hashlib
import logging
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
from hookline.engine.checkpoint import load_checkpoint_file, make_meta, serialize, write_checkpoint


def timings(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, min) milliseconds of ``repeat`` calls of ``fn``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    torch.set_num_threads(1)
    work_dir = Path(tempfile.mkdtemp(prefix="hookline-ckpt-bench-"))
    cfg = load_config(demo_config_path())
    cfg.update(max_epochs=1, default_hooks={"logger": None, "progress": None, "checkpoint": None})
    runner = build_runner(cfg, work_dir=work_dir)
    runner.logger.setLevel(logging.WARNING)
    runner.train()
    path = work_dir / "bench.pth"
    runner.save_checkpoint(path)
    size = path.stat().st_size
    payload = path.read_bytes()

    rows = [
        ("demo: runner.save_checkpoint", size, timings(lambda: runner.save_checkpoint(path),
                                                       args.repeat)),
        ("demo: load_checkpoint_file", size, timings(lambda: load_checkpoint_file(path),
                                                     args.repeat)),
        ("demo: sha256 of the payload", size, timings(lambda: hashlib.sha256(payload).digest(),
                                                      args.repeat)),
    ]
    big = serialize({"meta": make_meta(0, 0), "state_dict": {"w": torch.randn(25_000_000)}})
    big_path = work_dir / "big.pth"
    rows += [
        ("100 MB: write_checkpoint", len(big), timings(lambda: write_checkpoint(big_path, big),
                                                       max(3, args.repeat // 3))),
        ("100 MB: load_checkpoint_file", len(big), timings(lambda: load_checkpoint_file(big_path),
                                                           max(3, args.repeat // 3))),
        ("100 MB: sha256 of the payload", len(big), timings(lambda: hashlib.sha256(big).digest(),
                                                            max(3, args.repeat // 3))),
    ]
    print(f"machine: {cpu_model()}, Python {platform.python_version()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch thread(s); work dir {work_dir}")
    print(f"{'what':<32} {'bytes':>11} {'median ms':>10} {'min ms':>8}")
    for name, nbytes, (median, best) in rows:
        print(f"{name:<32} {nbytes:>11,} {median:>10.3f} {best:>8.3f}")


if __name__ == "__main__":
    main()
