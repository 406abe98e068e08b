"""What the logging and timing hooks cost per iteration, and what hook profiling costs.

Measures, in one run:

* ``HookTable.call`` on a stage with 6 no-op hooks: profiling off (the
  default) against ``start_profiling()`` (nanoseconds per stage call);
* a real CPU training loop (tiny linear model, 2,000 iterations, batch 32):
  microseconds per iteration with no logging hooks, with IterTimerHook +
  LoggerHook(interval=50) + a silent ProgressBarHook (the defaults), and with
  a TensorboardLoggerHook(interval=50) added. Each figure is the median of
  ``--repeat`` runs, interleaved (min and median; the min is the least disturbed
  by other load on the machine);
* the time spent inside each logging hook per iteration, from
  ``runner.hook_profile()`` (less sensitive to machine load than the totals);
* one log step: the same loop with ``LoggerHook(interval=1)`` (every iteration
  is a log step; console to /dev/null, ``log.txt``, ``metrics.jsonl``), with
  the lines and records written by the logger's writer thread (the default)
  and on the training thread (``writer_of(runner.logger).background = False``),
  interleaved: microseconds inside ``LoggerHook.after_train_iter`` per log step
  (the training thread's cost), and the run's wall and process CPU time per
  iteration (CPU time counts the writer thread too: whether it overlaps with
  compute shows as wall time below CPU time).

    .venv/bin/python benchmarks/logging_hooks.py [--repeat 5] [--iters 2000] [--log-step-only]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
import timeit

import torch
from torch.utils.data import DataLoader, TensorDataset

from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs
from hookline import Hook, Runner
from hookline.engine.hook_table import HookTable
from hookline.hooks import LoggerHook


class Noop(Hook):
    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        pass


def dispatch_ns(profiled: bool, number: int = 200_000) -> float:
    table = HookTable()
    for _ in range(6):
        table.add(Noop())
    if profiled:
        table.start_profiling()
    call = table.call
    best = min(timeit.repeat(lambda: call(None, "after_train_iter", batch_idx=0, data_batch=None,
                                          outputs=None), number=number, repeat=5))
    return best / number * 1e9


SETUPS = {
    "no logging hooks": ({"timer": None, "logger": None, "progress": None}, []),
    "timer + logger + progress (defaults)": ({"logger": {"type": "LoggerHook", "interval": 50}},
                                             []),
    "defaults + TensorboardLoggerHook": ({"logger": {"type": "LoggerHook", "interval": 50}},
                                         [{"type": "TensorboardLoggerHook", "interval": 50}]),
}


LOGGING = ("IterTimerHook", "LoggerHook", "ProgressBarHook", "TensorboardLoggerHook")


def seconds_per_iter(name: str, iters: int, inside: dict | None = None) -> float:
    defaults, hooks = SETUPS[name]
    data = TensorDataset(torch.randn(iters * 32 // 4, 16), torch.randint(0, 4, (iters * 32 // 4,)))
    runner = Runner(torch.nn.Linear(16, 4), optimizer={"type": "SGD", "lr": 0.01},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_iters=iters,
                    train_dataloader=DataLoader(data, batch_size=32), work_dir=tempfile.mkdtemp(),
                    hooks=hooks, default_hooks={"checkpoint": None, **defaults})
    runner.logger.handlers = [h for h in runner.logger.handlers if not hasattr(h, "stream")
                              or h.stream.name != "<stdout>"]
    if inside is not None:
        runner.hooks.start_profiling()
    start = time.perf_counter()
    runner.train()
    elapsed = (time.perf_counter() - start) / iters
    if inside is not None:
        for row in runner.hook_profile():
            if row.hook in LOGGING:
                inside.setdefault(row.hook, [0.0, 0.0])
                if row.stage.endswith("_iter"):
                    inside[row.hook][0] += row.total_s / iters
                else:
                    inside[row.hook][1] += row.total_s
    return elapsed


WRITER_MODES = ("writer thread", "training thread")


class TimedLogger(LoggerHook):
    """LoggerHook that adds up the wall and thread-CPU time of its log steps."""

    wall = cpu = 0.0
    steps = 0

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        super().after_train_iter(runner, batch_idx, data_batch, outputs)
        self.cpu += time.thread_time() - cpu
        self.wall += time.perf_counter() - wall
        self.steps += 1


def log_step(mode: str, iters: int) -> tuple[float, float, float, float]:
    """(wall us and training-thread CPU us per log step, run wall us / iter, run process
    CPU us / iter) of a run with a log step every iteration, lines written the ``mode`` way."""
    data = TensorDataset(torch.randn(iters * 32, 16), torch.randint(0, 4, (iters * 32,)))
    try:  # the writer thread exists since issue 16; before it, every line was synchronous
        hook = TimedLogger(interval=1, background=mode == "writer thread")
    except TypeError:
        hook = TimedLogger(interval=1)
    runner = Runner(torch.nn.Linear(16, 4), optimizer={"type": "SGD", "lr": 0.01},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_iters=iters,
                    train_dataloader=DataLoader(data, batch_size=32), work_dir=tempfile.mkdtemp(),
                    default_hooks={"checkpoint": None, "progress": None, "logger": None},
                    hooks=[hook])
    null = open(os.devnull, "w")  # noqa: SIM115  (closed below)
    for handler in runner.logger.handlers:
        if hasattr(handler, "setStream") and getattr(handler.stream, "name", "") == "<stdout>":
            handler.setStream(null)
    wall, cpu = time.perf_counter(), time.process_time()
    runner.train()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    null.close()
    assert hook.steps == iters
    return (hook.wall / iters * 1e6, hook.cpu / iters * 1e6, wall / iters * 1e6,
            cpu / iters * 1e6)


def log_step_table(repeat: int, iters: int) -> None:
    results: dict[str, list[tuple[float, ...]]] = {mode: [] for mode in WRITER_MODES}
    for r in range(repeat):
        for mode in (WRITER_MODES if r % 2 == 0 else WRITER_MODES[::-1]):
            results[mode].append(log_step(mode, iters))
    print(f"\none log step (LoggerHook interval=1, {iters} iterations, {repeat} runs each, "
          "interleaved)\n")
    print("| lines written on | log step wall us (min / median) | log step training-thread "
          "CPU us (min / median) | run wall us/iter (min / median) | run CPU us/iter "
          "(min / median) |")
    print("|---|---|---|---|---|")
    for mode, rows in results.items():
        cells = [f"{min(col):.1f} / {statistics.median(col):.1f}" for col in zip(*rows)]
        print(f"| {mode} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--log-step-only", action="store_true",
                        help="only the one-log-step table")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}, python {platform.python_version()}, "
          f"torch {torch.__version__}, 1 torch thread")
    print("command: python benchmarks/logging_hooks.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" if not isinstance(v, bool) else f"--{k.replace('_', '-')}"
        for k, v in vars(args).items() if v))
    if args.log_step_only:
        log_step_table(args.repeat, args.iters)
        return
    off, on = dispatch_ns(False), dispatch_ns(True)
    print(f"HookTable.call, 6 no-op hooks: profiling off {off:.0f} ns, on {on:.0f} ns "
          f"(+{(on - off) / 6:.0f} ns per hook call)")
    results: dict[str, list[float]] = {name: [] for name in SETUPS}
    for _ in range(args.repeat):
        for name in SETUPS:
            results[name].append(seconds_per_iter(name, args.iters))
    base = min(results["no logging hooks"])
    print(f"{'':<38} {'min':>8} {'median':>8}  (min - baseline)")
    for name, values in results.items():
        best, median = min(values), statistics.median(values)
        print(f"{name:<38} {best * 1e6:8.1f} {median * 1e6:8.1f}  us/iter "
              f"(+{(best - base) * 1e6:.1f} us)")
    inside: dict[str, list[float]] = {}
    seconds_per_iter("defaults + TensorboardLoggerHook", args.iters, inside)
    print("time inside each logging hook (runner.hook_profile()): per iteration in the "
          "*_iter stages, and once per run in the others")
    for hook, (per_iter, once) in inside.items():
        print(f"  {hook:<24} {per_iter * 1e6:6.1f} us/iter  {once * 1e3:7.2f} ms/run")
    log_step_table(args.repeat, args.iters)


if __name__ == "__main__":
    main()
