"""The fast data path against the DataLoader: one pass over an in-memory TensorDataset.

For each shape and batch size, a pass over a shuffling ``DataLoader``
(``num_workers=0``, the default ``collate_fn``) is timed two ways: ``iter(loader)``
(the DataLoader's per-sample ``__getitem__`` and ``default_collate``) and
``hookline.engine.fast_batches.iter_batches(loader)`` (the same batches by
indexing the dataset's tensors with the sampler's indices). The two are
interleaved in short batches of passes; each is timed in process CPU time
(``time.process_time``, less disturbed when other work shares the machine)
and wall time; reported: min and median microseconds per batch, and the
DataLoader's median over the fast path's. One torch thread.

    .venv/bin/python benchmarks/fast_data.py [--repeat 9] [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from importlib import metadata

import torch
from torch.utils.data import DataLoader, TensorDataset

from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs
from hookline.engine.fast_batches import iter_batches

SHAPES = {"32 features": (32,), "3x32x32 images": (3, 32, 32)}
BATCHES = (32, 128, 512)


def one_pass(batches) -> tuple[float, float, int]:
    """(wall s, CPU s, batches) of reading every batch of one pass."""
    wall, cpu = time.perf_counter(), time.process_time()
    count = sum(1 for _ in batches())
    return time.perf_counter() - wall, time.process_time() - cpu, count


def measure(shape: tuple[int, ...], batch: int, samples: int, repeat: int) -> dict[str, list]:
    data = TensorDataset(torch.randn(samples, *shape), torch.randint(0, 10, (samples,)))
    loader = DataLoader(data, batch_size=batch, shuffle=True)
    ways = {"DataLoader": lambda: iter(loader), "fast path": lambda: iter_batches(loader)}
    times: dict[str, list] = {name: [] for name in ways}
    for r in range(repeat):
        for name in (list(ways) if r % 2 == 0 else list(ways)[::-1]):
            wall, cpu, count = one_pass(ways[name])
            times[name].append((wall / count * 1e6, cpu / count * 1e6))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="passes each way")
    parser.add_argument("--quick", action="store_true", help="3 passes each, a quarter of the data")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    repeat = 3 if args.quick else args.repeat
    samples = 2048 if args.quick else 8192
    command = ["python", "benchmarks/fast_data.py", *(sys.argv[1:] if argv is None else argv)]
    print(f"command: {' '.join(command)}")
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
          f"torch {metadata.version('torch')}; {samples} samples, {repeat} passes each way, "
          "interleaved, 1 thread")
    print("\n| data | batch | DataLoader us/batch CPU min / median | fast path us/batch CPU min / "
          "median | DataLoader wall median | fast path wall median | DataLoader / fast (CPU) |")
    print("|---|---|---|---|---|---|---|")
    for label, shape in SHAPES.items():
        for batch in BATCHES:
            times = measure(shape, batch, samples, repeat)
            slow_cpu = [cpu for _, cpu in times["DataLoader"]]
            fast_cpu = [cpu for _, cpu in times["fast path"]]
            median = statistics.median
            print(f"| {label} | {batch} | {min(slow_cpu):.0f} / {median(slow_cpu):.0f} | "
                  f"{min(fast_cpu):.0f} / {median(fast_cpu):.0f} | "
                  f"{median(w for w, _ in times['DataLoader']):.0f} | "
                  f"{median(w for w, _ in times['fast path']):.0f} | "
                  f"{median(slow_cpu) / median(fast_cpu):.1f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
