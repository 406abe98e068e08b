"""How much of a forward pass LayerProfiler's per-layer times account for.

LayerProfiler times every leaf module (CUDA events on a GPU, ``perf_counter``
on a CPU) and the model's whole forward. The sum of the layer times over the
forward time is its coverage: what is left is the time between layers (Python,
the residual additions of a ResNet, kernel launch gaps). The issue's target on
a GPU: the layer sum within 15% of the forward time on a ResNet-18-shaped
model.

    .venv/bin/python benchmarks/layer_profiler_coverage.py [--device cuda] [--batch 128]
"""

from __future__ import annotations

import argparse
import platform
import statistics

import torch

from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs
from _workloads import WORKLOADS, build_model
from hookline.inspect import LayerProfiler


def measure(device: str, batch: int, calls: int, warmup: int) -> tuple[float, float, str]:
    torch.manual_seed(0)
    model = build_model(torch, WORKLOADS["resnet18"]).to(device).eval()
    inputs = torch.randn(batch, *WORKLOADS["resnet18"].input_shape, device=device)
    with torch.no_grad(), LayerProfiler(model, warmup=warmup) as profiler:
        for _ in range(warmup + calls):
            model(inputs)
    return profiler.layers_ms, profiler.forward_ms, profiler.table()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--calls", type=int, default=20, help="timed forward calls per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--table", action="store_true", help="also print the per-layer table")
    args = parser.parse_args()
    torch.set_num_threads(1 if args.device == "cpu" else torch.get_num_threads())
    where = (torch.cuda.get_device_name(torch.device(args.device)) if args.device != "cpu"
             else f"{cpu_model()}, 1 thread")
    print(f"machine: {where}; Python {platform.python_version()}, torch {torch.__version__}")
    print(f"ResNet-18-shaped CNN, batch {args.batch}, 3x64x64, eval/no_grad, {args.calls} timed "
          f"forwards per round after 3 warm-up calls, {args.rounds} rounds")
    shares = []
    for round_ in range(args.rounds):
        layers, forward, table = measure(args.device, args.batch, args.calls, warmup=3)
        shares.append(layers / forward)
        print(f"  round {round_ + 1}: layers {layers:.1f} ms of forward {forward:.1f} ms "
              f"= {100 * layers / forward:.1f}%")
    print(f"median coverage {100 * statistics.median(shares):.1f}% (target >= 85% on a GPU)")
    if args.table:
        print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
