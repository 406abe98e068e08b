"""Checkpoint write throughput for 10 MB, 100 MB and 1 GB models, against torch.save and dd.

Each model is a stack of 8 square ``Linear`` layers whose float32 parameters
add up to the size (10 MB, 100 MB, 1 GB), trained with Adam by a hookline
``Runner`` (so the checkpoint holds the weights and Adam's two moment buffers:
the file is about 3x the parameter bytes). Every training iteration of the
run saves once, in rotating order (one measurement of each an iteration, so a
busy disk slows all three alike):

* ``dd``: ``dd if=/dev/zero of=FILE bs=1M count=N conv=fsync`` for a file of
  the checkpoint's size: the disk's own sequential write speed, to durable;
* ``torch.save``: ``torch.save({"state_dict": ..., "optimizer": ...}, f)``
  of the same model and optimizer, then ``os.fsync`` (the time to return and
  the time until the file is durable);
* ``hookline``: the real ``CheckpointHook(by_epoch=False, interval=1,
  max_keep_ckpts=1)`` call in ``after_train_iter`` (collect, serialise on the
  training thread, hand the bytes to the writer thread: the time the training
  thread is **blocked**), then ``runner.flush_checkpoints()`` (the writer's
  atomic write with its sha256, fsync, rename, fsync of the folder, the
  ``latest`` pointer, the keep-1 deletion: the time until the file is
  **durable**).

Each size runs in its own subprocess; files go to a temp folder (``--dir``,
default the system temp folder: say which filesystem it is on) and are
deleted. A size is skipped, with a line saying so, when that folder's disk has
less than 4x its checkpoint free (1 GB needs ~12 GB) or the machine has less
than 5x it of available memory. Reported: median and min seconds per write,
MB/s from the median (MB = 10^6 bytes).

    .venv/bin/python benchmarks/checkpoint_throughput.py [--repeat 5] [--sizes 10 100 1000]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _subprocess import machine_line, report, run_worker

LAYERS = 8
ADAM_FACTOR = 3  # weights + exp_avg + exp_avg_sq


def width_for(megabytes: int) -> int:
    """Width of the square layers whose ``LAYERS`` weight matrices hold ``megabytes`` MB."""
    return int(math.sqrt(megabytes * 1e6 / 4 / LAYERS))


def available_memory() -> int:
    with open("/proc/meminfo") as info:
        for line in info:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def fsynced_save(torch, obj: object, path: Path) -> tuple[float, float]:
    """(seconds until ``torch.save`` returns, seconds until the file is fsynced)."""
    start = time.perf_counter()
    with open(path, "wb") as stream:
        torch.save(obj, stream)
        saved = time.perf_counter() - start
        stream.flush()
        os.fsync(stream.fileno())
    return saved, time.perf_counter() - start


def dd(path: Path, nbytes: int) -> float:
    count = max(1, round(nbytes / 2**20))
    start = time.perf_counter()
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={count}",
                    "conv=fsync"], check=True, capture_output=True)
    return time.perf_counter() - start


def worker(megabytes: int, repeat: int, folder: Path) -> None:
    import torch  # noqa: PLC0415
    from torch.utils.data import DataLoader, TensorDataset  # noqa: PLC0415

    from hookline import Runner  # noqa: PLC0415
    from hookline.hooks import CheckpointHook  # noqa: PLC0415

    torch.set_num_threads(1)
    width = width_for(megabytes)
    model = torch.nn.Sequential(*(torch.nn.Linear(width, width, bias=False)
                                  for _ in range(LAYERS)))
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    times: dict[str, list[float]] = {"dd": [], "torch.save": [], "torch.save+fsync": [],
                                     "blocked": [], "durable": []}
    sizes: dict[str, int] = {}

    class TimedCheckpoints(CheckpointHook):
        """The real CheckpointHook, timed, with the baselines measured beside it."""

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            order = ["hookline", "torch.save", "dd"]
            shift = runner.iter % len(order)
            for what in order[shift:] + order[:shift]:
                if what == "hookline":
                    start = time.perf_counter()
                    super().after_train_iter(runner, batch_idx, data_batch, outputs)
                    times["blocked"].append(time.perf_counter() - start)
                    runner.flush_checkpoints()
                    times["durable"].append(time.perf_counter() - start)
                    sizes["hookline"] = (folder / f"iter_{runner.iter + 1}.pth").stat().st_size
                elif what == "torch.save":
                    path = folder / "plain.pth"
                    saved, durable = fsynced_save(
                        torch, {"state_dict": model.state_dict(),
                                "optimizer": runner.optim_wrapper.state_dict()}, path)
                    times["torch.save"].append(saved)
                    times["torch.save+fsync"].append(durable)
                    sizes["torch.save"] = path.stat().st_size
                    path.unlink()
                else:
                    path = folder / "dd.bin"
                    times["dd"].append(dd(path, sizes.get("torch.save", param_bytes * 3)))
                    path.unlink()

    data = TensorDataset(torch.randn(4, width), torch.randn(4, width))
    runner = Runner(model, optimizer={"type": "Adam", "lr": 1e-4},
                    loss_fn=torch.nn.MSELoss(), max_iters=repeat,
                    train_dataloader=DataLoader(data, batch_size=4),
                    work_dir=folder, device="cpu",
                    default_hooks={"checkpoint": TimedCheckpoints(by_epoch=False, interval=1,
                                                                  max_keep_ckpts=1),
                                   "logger": None, "timer": None, "progress": None})
    runner.train()
    report({"megabytes": megabytes, "width": width, "param_bytes": param_bytes,
            "sizes": sizes, "times": times})


def row(result: dict) -> str:
    t = result["times"]
    size = result["sizes"]["hookline"]
    med = {k: statistics.median(v) for k, v in t.items()}
    low = {k: min(v) for k, v in t.items()}

    def rate(seconds: float, nbytes: int = size) -> str:
        return f"{nbytes / seconds / 1e6:,.0f}"

    blocked_share = med["blocked"] / med["durable"] * 100
    return (f"| {result['param_bytes'] / 1e6:,.0f} MB ({LAYERS} x Linear({result['width']})) "
            f"| {size / 1e6:,.0f} | {len(t['durable'])} "
            f"| {med['dd']:.3f} ({rate(med['dd'])}) "
            f"| {med['torch.save']:.3f} / {med['torch.save+fsync']:.3f} "
            f"({rate(med['torch.save+fsync'], result['sizes']['torch.save'])}) "
            f"| **{med['blocked']:.3f}** (min {low['blocked']:.3f}) "
            f"| {med['durable']:.3f} (min {low['durable']:.3f}) ({rate(med['durable'])}) "
            f"| {blocked_share:.0f}% |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5,
                        help="writes of each kind per size (the 1 GB model: at most 2)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000],
                        help="parameter megabytes of the models")
    parser.add_argument("--dir", default=None, help="where to write (default: the temp folder)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.repeat, Path(args.folder))
        return 0
    base = Path(args.dir or tempfile.gettempdir())
    repo = Path(__file__).resolve().parents[1]
    same = "the same filesystem as" if base.stat().st_dev == repo.stat().st_dev else \
        "NOT the same filesystem as"
    print(machine_line())
    print(f"writing to {base} ({same} the repository), "
          f"{shutil.disk_usage(base).free / 2**30:.0f} GiB free; Adam (file ~{ADAM_FACTOR}x "
          f"the parameters); 1 torch thread; seconds per write, median (MB/s from the median)")
    print(f"command: python benchmarks/checkpoint_throughput.py --repeat {args.repeat} "
          f"--sizes {' '.join(map(str, args.sizes))}\n")
    results = []
    for megabytes in args.sizes:
        file_bytes = megabytes * 1e6 * ADAM_FACTOR
        free = shutil.disk_usage(base).free
        if free < 4 * file_bytes:
            print(f"skipped {megabytes} MB: {free / 2**30:.1f} GiB free on {base}, "
                  f"needs {4 * file_bytes / 2**30:.1f} GiB")
            continue
        if available_memory() < 5 * file_bytes:
            print(f"skipped {megabytes} MB: {available_memory() / 2**30:.1f} GiB of memory "
                  f"available, needs {5 * file_bytes / 2**30:.1f} GiB")
            continue
        repeat = min(args.repeat, 2) if megabytes >= 1000 else args.repeat
        folder = Path(tempfile.mkdtemp(prefix="hookline-ckpt-throughput-", dir=base))
        try:
            results.append(run_worker([sys.executable, __file__, "--worker", str(megabytes),
                                       "--repeat", str(repeat), "--folder", str(folder)],
                                      timeout=1800))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(f"  {megabytes} MB done", file=sys.stderr, flush=True)
    print("| model (parameters) | checkpoint MB | writes | dd conv=fsync s (MB/s) "
          "| torch.save s / +fsync s (MB/s) | hookline: training thread blocked s "
          "| hookline: durable s (MB/s) | blocked / durable |")
    print("|---|---|---|---|---|---|---|---|")
    for result in results:
        print(row(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
