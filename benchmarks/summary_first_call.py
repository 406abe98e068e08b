"""The cost of a first ``summary()`` call in a fresh process, apart from ``import torch``.

Each run starts a new Python process that times, in order: ``import torch``,
``from hookline.inspect import summary``, building the demo model, and the
first ``summary(model, input_size=(1, 1, 8, 8))``; torchinfo's first
``summary`` (when installed) is timed in a process of its own. The medians
over ``--runs`` processes are printed, in seconds.

    .venv/bin/python benchmarks/summary_first_call.py [--runs 5] [--src DIR]

``--src`` puts another copy of hookline's ``src`` first on the path (to time
an older version: ``git archive HEAD src | tar -x -C /tmp/old`` then
``--src /tmp/old/src``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_model

HOOKLINE = """
import json, time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
from hookline.inspect import summary
t2 = time.perf_counter()
from hookline.demo.model import DigitsCNN
model = DigitsCNN()
t3 = time.perf_counter()
summary(model, input_size=(1, 1, 8, 8))
t4 = time.perf_counter()
print(json.dumps({"import torch": t1 - t0, "import hookline.inspect": t2 - t1,
                  "first summary": t4 - t3, "hookline import + first summary": t4 - t3 + t2 - t1}))
"""

TORCHINFO = """
import json, time
import torch
from hookline.demo.model import DigitsCNN
model = DigitsCNN()
t0 = time.perf_counter()
from torchinfo import summary
t1 = time.perf_counter()
summary(model, input_size=(1, 1, 8, 8), verbose=0)
t2 = time.perf_counter()
print(json.dumps({"torchinfo import + first summary": t2 - t0}))
"""


def run(code: str, src: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per measurement (default: 5)")
    parser.add_argument("--src", default=None,
                        help="a hookline src directory to time instead of the installed one")
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    for _ in range(args.runs):
        for key, value in run(HOOKLINE, args.src).items():
            results.setdefault(key, []).append(value)
    try:
        import torchinfo  # noqa: F401, PLC0415
    except ImportError:
        pass
    else:
        for _ in range(args.runs):
            for key, value in run(TORCHINFO, args.src).items():
                results.setdefault(key, []).append(value)
    import torch  # noqa: PLC0415

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"torch {torch.__version__}; median of {args.runs} fresh processes")
    for key, values in results.items():
        print(f"{key:36s} {statistics.median(values):7.3f} s")


if __name__ == "__main__":
    main()
