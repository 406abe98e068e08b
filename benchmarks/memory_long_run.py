"""Resident memory over a 20,000-iteration run: the default hooks, and with the inspect hooks.

Trains Linear(32, 64)-ReLU-Linear(64, 10) on 12,800 synthetic samples,
batch 32 (400 iterations an epoch), 50 epochs = 20,000 iterations, SGD, one
thread, and samples the process's resident memory (``VmRSS`` of
``/proc/self/status``) and then, after ``gc.collect()``, the number of
objects the garbage collector tracks, every 500 iterations, from a hook.
Each configuration runs in its own fresh process:

* ``plain``: a plain PyTorch loop over the same DataLoader (the floor: what
  torch and the allocator do on their own), sampled in the loop;
* ``hookline``: ``Runner(...).train()`` with its default hooks (scheduler,
  timer, logger every 10 iterations to log.txt and metrics.jsonl, a
  checkpoint every epoch, sampler seed);
* ``hookline+inspect``: the same plus ``GradientMonitorHook(interval=50)``
  and ``ActivationStatsHook(interval=50)`` (gradient statistics of every
  parameter at every backward pass, activation statistics of the ReLU).

The memory must be flat: every history the hooks keep is a bounded window
(LoggerHook's, the GradientMonitor's last 1,000 steps). With ``--trace``,
each run also takes a ``tracemalloc`` snapshot at 1,000 and at 20,000
iterations and prints the 8 source lines whose Python allocations grew most
between them. Tracing slows the run about 5x (use ``--iters 4000``), and its
own tables and the first snapshot then count in the RSS and object columns.

    .venv/bin/python benchmarks/memory_long_run.py [--iters 20000] [--trace]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import tracemalloc
from pathlib import Path

from _subprocess import machine_line, report, run_worker

SAMPLES_PER_EPOCH, BATCH, EVERY = 12_800, 32, 500
MARKS = (1_000, 5_000, 10_000, 15_000, 20_000)
CONFIGS = ("plain", "hookline", "hookline+inspect")


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status (not Linux?)")


class Sampler:
    """RSS and gc-tracked objects every ``EVERY`` iterations; tracemalloc snapshots if tracing."""

    def __init__(self, iters: int, trace: bool) -> None:
        self.samples: dict[int, tuple[int, int]] = {}
        self.first_mark, self.last_mark = min(MARKS[0], iters), iters
        self.trace = trace
        self.snapshots: list[tracemalloc.Snapshot] = []
        if trace:
            tracemalloc.start(4)

    def after(self, iteration: int) -> None:
        """Call after iteration ``iteration`` (1-based)."""
        if iteration % EVERY:
            return
        rss = rss_kib()
        gc.collect()  # count live objects, not cyclic garbage waiting for the collector
        self.samples[iteration] = (rss, len(gc.get_objects()))
        if self.trace and iteration in (self.first_mark, self.last_mark):
            self.snapshots.append(tracemalloc.take_snapshot())

    def growth(self) -> list[str]:
        if len(self.snapshots) < 2:
            return []
        stats = self.snapshots[1].compare_to(self.snapshots[0], "lineno")
        return [str(stat) for stat in stats[:8]]


def make_loader(torch):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(SAMPLES_PER_EPOCH, 32),
                                          torch.randint(0, 10, (SAMPLES_PER_EPOCH,)))
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    return model, torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True)


def run_plain(iters: int, sampler: Sampler, work_dir: str) -> int:  # noqa: ARG001
    import torch  # noqa: PLC0415

    model, loader = make_loader(torch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    done = 0
    while done < iters:
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss_fn(model(inputs), targets).backward()
            optimizer.step()
            done += 1
            sampler.after(done)
            if done == iters:
                break
    return done


def run_hookline(iters: int, sampler: Sampler, work_dir: str, inspect: bool) -> int:
    import torch  # noqa: PLC0415

    from hookline import Hook, Runner  # noqa: PLC0415
    from hookline.hooks import ActivationStatsHook, GradientMonitorHook  # noqa: PLC0415

    class Probe(Hook):
        priority = "LOWEST"

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):  # noqa: ARG002
            sampler.after(runner.iter + 1)

    model, loader = make_loader(torch)
    hooks: list = [Probe()]
    if inspect:
        hooks += [GradientMonitorHook(interval=50), ActivationStatsHook(interval=50)]
    runner = Runner(model, optimizer={"type": "SGD", "lr": 0.01},
                    loss_fn=torch.nn.CrossEntropyLoss(),
                    max_epochs=iters // (SAMPLES_PER_EPOCH // BATCH), train_dataloader=loader,
                    work_dir=Path(work_dir), device="cpu", hooks=hooks)
    runner.train()
    return runner.iter


def worker(config: str, iters: int, trace: bool) -> None:
    sampler = Sampler(iters, trace)
    with tempfile.TemporaryDirectory(prefix="hookline-memory-bench-") as work_dir:
        if config == "plain":
            done = run_plain(iters, sampler, work_dir)
        else:
            done = run_hookline(iters, sampler, work_dir, inspect=config.endswith("inspect"))
    report({"config": config, "iters": done, "samples": sampler.samples,
            "growth": sampler.growth()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=20_000,
                        help="iterations (a multiple of 400, the epoch length)")
    parser.add_argument("--trace", action="store_true",
                        help="print the Python allocations that grew (tracemalloc; slow)")
    parser.add_argument("--worker", choices=CONFIGS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    epoch = SAMPLES_PER_EPOCH // BATCH
    if args.iters % epoch or args.iters < MARKS[0]:
        parser.error(f"--iters must be a multiple of {epoch} and at least {MARKS[0]}")
    if args.worker:
        worker(args.worker, args.iters, args.trace)
        return 0
    marks = [m for m in MARKS if m < args.iters] + [args.iters]
    print(machine_line())
    print(f"MLP 32-64-10, {SAMPLES_PER_EPOCH:,} samples, batch {BATCH}, {args.iters:,} iterations "
          f"on the CPU, 1 thread; VmRSS sampled every {EVERY} iterations, one process a run"
          + (" (tracemalloc on)" if args.trace else ""))
    print(f"command: python benchmarks/memory_long_run.py --iters {args.iters}"
          + (" --trace" if args.trace else ""))
    results = []
    for config in CONFIGS:
        argv_ = [sys.executable, __file__, "--worker", config, "--iters", str(args.iters)]
        results.append(run_worker(argv_ + (["--trace"] if args.trace else []), timeout=3600))
        print(f"  {config} done", file=sys.stderr, flush=True)
    heads = " | ".join(f"{m // 1000}k" for m in marks)
    since = marks[1] if len(marks) > 2 else marks[0]  # after the first windows have filled
    print(f"\n| run | RSS MiB at {heads} | growth {marks[0] // 1000}k -> {marks[-1] // 1000}k "
          f"| growth {since // 1000}k -> {marks[-1] // 1000}k "
          "| gc-tracked objects at the same points (after gc.collect()) |")
    print("|---|" + "---|" * (len(marks) + 3))
    for result in results:
        samples = {int(k): v for k, v in result["samples"].items()}
        rss = [samples[m][0] / 1024 for m in marks]
        objects = " / ".join(f"{samples[m][1]:,}" for m in marks)
        print(f"| {result['config']} | " + " | ".join(f"{v:.1f}" for v in rss)
              + f" | {rss[-1] - rss[0]:+.1f} MiB | {rss[-1] - rss[marks.index(since)]:+.1f} MiB"
              f" | {objects} |")
    if args.trace:
        for result in results:
            print(f"\n{result['config']}: Python allocations that grew most, "
                  f"{marks[0]:,} -> {marks[-1]:,} iterations")
            for line in result["growth"]:
                print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
