"""hookline.inspect overhead: FeatureExtractor forward cost, summary() speed, memory over training.

Measures, in one run:

Times are CPU time of the benchmark's thread (``time.thread_time``) with one
torch thread, so that other processes on a shared machine do not count.

* **FeatureExtractor overhead**: forward time of a model with a
  FeatureExtractor on 3 layers against the plain forward (target <= 1.05x),
  on a small ResNet and a small transformer, under ``torch.no_grad()`` and
  with autograd on. Plain and hooked forwards are interleaved; the figure is
  the ratio of the medians.
* **summary() speed** against ``torchinfo.summary`` on the same models and
  inputs (median of several runs), with and without FLOP counting, and the
  MACs each reports.
* **Memory over training**: RSS, tracemalloc (Python allocations) and the
  number of live torch tensors every 1,000 steps of a training run of the
  demo model with a FeatureExtractor and a GradientMonitor attached (target:
  flat), and the step-time cost of the two tools.

The models come from ``tests/inspect/models.py`` (no torchvision here).

    .venv/bin/python benchmarks/inspect_overhead.py [--steps 10000] [--threads 1] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
import torchinfo
from torch import nn

from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.inspect.models import MLP, SmallResNet, TinyTransformer  # noqa: E402

from hookline.demo.model import DigitsCNN  # noqa: E402
from hookline.inspect import FeatureExtractor, GradientMonitor, summary  # noqa: E402


def machine() -> str:
    model = cpu_model()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"torch {torch.__version__}, torchinfo {torchinfo.__version__}, "
            f"torch threads {torch.get_num_threads()}, load average at start {load:.1f}")


def timed(fn: Callable[..., object], *args: object, **kwargs: object) -> float:
    """CPU seconds of this thread spent in ``fn``: with one torch thread all the work runs here,
    and on a shared machine this leaves out the time other processes hold the core."""
    start = time.thread_time()
    fn(*args, **kwargs)
    return time.thread_time() - start


# -- 1. FeatureExtractor overhead -------------------------------------------------------
def feature_cases() -> list[tuple[str, nn.Module, torch.Tensor, list[str]]]:
    torch.manual_seed(0)
    return [
        ("SmallResNet(width=32), 8x3x64x64", SmallResNet(width=32).eval(), torch.randn(8, 3, 64, 64),
         ["layer1", "layer2", "layer3"]),
        ("TinyTransformer(dim=128, 4 layers), 8x64 tokens",
         TinyTransformer(dim=128, heads=4, layers=4).eval(), torch.randint(0, 100, (8, 64)),
         ["encoder.layers.1", "encoder.layers.3", "head"]),
    ]


def hook_cost_us(loops: int = 2000) -> float:
    """Extra microseconds per forward that a FeatureExtractor on 3 layers costs, measured on
    layers that do no work (3 ``nn.Identity``), so that nothing but the hooks is timed."""
    model, x = nn.Sequential(nn.Identity(), nn.Identity(), nn.Identity()), torch.zeros(1)

    def run() -> float:
        start = time.thread_time()
        for _ in range(loops):
            model(x)
        return (time.thread_time() - start) / loops

    plain, hooked = [], []
    for _ in range(7):
        plain.append(run())
        with FeatureExtractor(model, ["0", "1", "2"]):
            hooked.append(run())
    return (min(hooked) - min(plain)) * 1e6


def feature_overhead(reps: int) -> tuple[list[str], float]:
    cost = hook_cost_us()
    rows = ["| model | autograd | plain forward (ms) | with FeatureExtractor on 3 layers (ms) | "
            "measured ratio (medians) | ratio from the hook cost |",
            "|---|---|---:|---:|---:|---:|"]
    for label, model, x, layers in feature_cases():
        for grad in (False, True):
            with torch.set_grad_enabled(grad):
                for _ in range(5):
                    model(x)
                plain, hooked = [], []
                for i in range(reps):  # alternate which goes first, so order effects cancel
                    if i % 2 == 0:
                        plain.append(timed(model, x))
                    with FeatureExtractor(model, layers):
                        hooked.append(timed(model, x))
                    if i % 2 == 1:
                        plain.append(timed(model, x))
            p, h = statistics.median(plain), statistics.median(hooked)
            rows.append(f"| {label} | {'on' if grad else 'no_grad'} | {p * 1e3:.2f} | {h * 1e3:.2f} | "
                        f"{h / p:.3f}x | {1 + cost * 1e-6 / p:.4f}x |")
    return rows, cost


# -- 2. summary() against torchinfo ------------------------------------------------------
def summary_cases() -> list[tuple[str, nn.Module, dict]]:
    torch.manual_seed(0)
    return [
        ("MLP(16-32-32-4), 2x16", MLP(), {"input_size": (2, 16)}),
        ("DigitsCNN, 1x1x8x8", DigitsCNN(), {"input_size": (1, 1, 8, 8)}),
        ("SmallResNet(width=16), 1x3x32x32", SmallResNet(width=16), {"input_size": (1, 3, 32, 32)}),
        ("TinyTransformer(dim=64, 2 layers), 1x128 tokens", TinyTransformer(dim=64, layers=2),
         {"input_data": torch.randint(0, 100, (1, 128))}),
    ]


def summary_speed(reps: int) -> list[str]:
    rows = ["| model | torchinfo.summary (ms) | hookline summary (ms) | hookline, count_flops=False (ms) | "
            "params equal | torchinfo MACs | hookline MACs |",
            "|---|---:|---:|---:|:---:|---:|---:|"]
    for label, model, inputs in summary_cases():
        theirs = torchinfo.summary(model, verbose=0, **inputs)
        ours = summary(model, **inputs)
        times: dict[str, list[float]] = {"torchinfo": [], "flops": [], "plain": []}
        for _ in range(reps):
            times["torchinfo"].append(timed(torchinfo.summary, model, verbose=0, **inputs))
            times["flops"].append(timed(summary, model, **inputs))
            times["plain"].append(timed(summary, model, count_flops=False, **inputs))
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        rows.append(f"| {label} | {med['torchinfo']:.1f} | {med['flops']:.1f} | {med['plain']:.1f} | "
                    f"{'yes' if theirs.total_params == ours.total_params else 'NO'} | "
                    f"{theirs.total_mult_adds:,} | {ours.total_macs:,} |")
    return rows


# -- 3. memory over training ---------------------------------------------------------------
def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def live_tensors() -> int:
    gc.collect()
    with warnings.catch_warnings():  # isinstance() on some deprecated torch objects warns
        warnings.simplefilter("ignore")
        return sum(1 for obj in gc.get_objects() if isinstance(obj, torch.Tensor))


def train(model: nn.Module, steps: int, batches: list[tuple[torch.Tensor, torch.Tensor]],
          every: int = 0, on_check: Callable[[int], None] | None = None) -> float:
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    start = time.thread_time()
    for step in range(steps):
        x, y = batches[step % len(batches)]
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        if on_check is not None and every and (step + 1) % every == 0:
            on_check(step + 1)
    return time.thread_time() - start


def memory_over_training(steps: int) -> tuple[list[str], list[str]]:
    torch.manual_seed(0)
    model = DigitsCNN()
    batches = [(torch.randn(32, 1, 8, 8), torch.randint(0, 10, (32,))) for _ in range(10)]
    train(model, 200, batches)  # warm up allocator and kernels
    rows = ["| step | RSS (MB) | RSS without tracemalloc's own memory (MB) | tracemalloc current (MB) | "
            "live torch tensors | monitor steps kept |",
            "|---:|---:|---:|---:|---:|---:|"]
    tracemalloc.start()
    with FeatureExtractor(model, ["features.0", "features.2", "classifier.1"]) as fx, \
            GradientMonitor(model) as monitor:
        def check(step: int) -> None:
            monitor.report()  # read, as a user would: flushes the statistics to the host
            kept = len(monitor.history(monitor.names[0]))  # every parameter has a gradient each step
            current = tracemalloc.get_traced_memory()[0] / 1e6
            tensors = live_tensors()
            rss, tracing = rss_mb(), tracemalloc.get_tracemalloc_memory() / 1e6
            cells = [f"{step:,}", f"{rss:.1f}", f"{rss - tracing:.1f}", f"{current:.2f}", tensors, kept]
            rows.append("| " + " | ".join(map(str, cells)) + " |")

        check(0)
        seconds = train(model, steps, batches, every=max(steps // 10, 1), on_check=check)
        assert fx.features and monitor.step == steps
    tracemalloc.stop()
    # step time: plain against both tools attached (no tracemalloc, short runs, interleaved)
    n = min(steps, 1000)
    plain, tooled = [], []
    for _ in range(3):
        plain.append(train(model, n, batches))
        with FeatureExtractor(model, ["features.0", "features.2", "classifier.1"]), GradientMonitor(model):
            tooled.append(train(model, n, batches))
    p, t = min(plain) / n * 1e3, min(tooled) / n * 1e3
    timing = [f"- {steps:,} monitored steps took {seconds:.1f} s of CPU time (with tracemalloc on).",
              f"- Step time, DigitsCNN batch 32 with SGD: plain {p:.3f} ms, with FeatureExtractor (3 layers) "
              f"and GradientMonitor (8 parameters) {t:.3f} ms ({t / p:.2f}x; best of 3 runs of {n:,} steps)."]
    return rows, timing


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10_000, help="training steps for the memory check")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (default 1: steadier timings on a shared machine)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and 1,000 steps")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    steps = 1000 if args.quick else args.steps
    reps = 7 if args.quick else 31
    print(f"Machine: {machine()}\n")
    print("Times: CPU time of the benchmark thread (time.thread_time).\n")
    print("### FeatureExtractor overhead (median of interleaved runs)\n")
    rows, cost = feature_overhead(reps)
    print("\n".join(rows))
    print(f"\nHook cost of a FeatureExtractor on 3 layers (3 forward hooks, 2 on the model, detach, "
          f"version check), measured on nn.Identity layers: {cost:.1f} us per forward.")
    print("\n### summary() against torchinfo.summary (median)\n")
    print("\n".join(summary_speed(max(reps // 3, 5))))
    print(f"\n### Memory over {steps:,} training steps with FeatureExtractor and GradientMonitor attached\n")
    rows, timing = memory_over_training(steps)
    print("\n".join(rows))
    print()
    print("\n".join(timing))


if __name__ == "__main__":
    main()
