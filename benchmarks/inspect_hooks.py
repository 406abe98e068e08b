"""What GradientMonitorHook and ActivationStatsHook cost per training iteration.

Trains the demo's ``DigitsCNN`` (8 parameter tensors, 4 activation layers;
batch 32 of 1x8x8) and ``SmallResNet(width=16)`` of ``tests/inspect/models.py``
(the ResNet has 29 parameter tensors and 7 ReLUs; batch 16 of 3x32x32) with
the Runner for ``--iters`` iterations, with neither hook, with each, and with
both at ``interval=50``, recording every iteration or (``every=10``) every
tenth. The setups alternate, ``--repeat`` times; each
figure is the median of the CPU time of the process's thread per iteration
(``time.thread_time``, so other processes on a shared machine do not count;
the TensorBoard writer's thread is not in it, and no TensorboardLoggerHook
is registered here). One torch thread.

    .venv/bin/python benchmarks/inspect_hooks.py [--repeat 5] [--iters 300]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset

from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.inspect.models import SmallResNet  # noqa: E402

from hookline import Runner  # noqa: E402
from hookline.demo.model import DigitsCNN  # noqa: E402
from hookline.hooks import ActivationStatsHook, GradientMonitorHook  # noqa: E402

MODELS = {
    "DigitsCNN, 32x1x8x8": (DigitsCNN, (1, 8, 8), 32),
    "SmallResNet(16), 16x3x32x32": (lambda: SmallResNet(width=16), (3, 32, 32), 16),
}
SETUPS = {
    "no inspect hook": lambda: [],
    "GradientMonitorHook(50)": lambda: [GradientMonitorHook(interval=50)],
    "ActivationStatsHook(50)": lambda: [ActivationStatsHook(interval=50)],
    "both": lambda: [GradientMonitorHook(interval=50), ActivationStatsHook(interval=50)],
    "both, every=10": lambda: [GradientMonitorHook(interval=50, every=10),
                               ActivationStatsHook(interval=50, every=10)],
}


def seconds_per_iter(model_name: str, setup: str, iters: int) -> float:
    build, shape, batch = MODELS[model_name]
    torch.manual_seed(0)
    n = iters * batch
    data = TensorDataset(torch.randn(n, *shape), torch.randint(0, 10, (n,)))
    runner = Runner(build(), optimizer={"type": "SGD", "lr": 0.01, "momentum": 0.9},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_iters=iters, device="cpu",
                    train_dataloader=DataLoader(data, batch_size=batch), work_dir=tempfile.mkdtemp(),
                    hooks=SETUPS[setup](),
                    default_hooks={"checkpoint": None, "progress": None, "logger": None})
    runner.logger.handlers = [h for h in runner.logger.handlers if not hasattr(h, "stream")
                              or getattr(h.stream, "name", "") != "<stdout>"]
    start = time.thread_time()
    runner.train()
    return (time.thread_time() - start) / iters


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--iters", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"python {platform.python_version()}, torch {torch.__version__}, "
          f"{cpu_model()}, 1 torch thread, {args.iters} iterations")
    for model_name in MODELS:
        results: dict[str, list[float]] = {name: [] for name in SETUPS}
        for _ in range(args.repeat):
            for name in SETUPS:
                results[name].append(seconds_per_iter(model_name, name, args.iters))
        base = statistics.median(results["no inspect hook"])
        print(f"{model_name}: median us/iter (thread CPU time)")
        for name, values in results.items():
            median = statistics.median(values)
            print(f"  {name:<26} {median * 1e6:9.1f}  ({median / base:.3f}x, "
                  f"{(median - base) * 1e6:+.1f} us)")


if __name__ == "__main__":
    main()
