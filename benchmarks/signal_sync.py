"""What sharing the stop flag costs a two-process run, per iteration (``signal_sync_interval``).

Under ``torchrun`` the Runner all-reduces a stop flag over a gloo group so that
a SIGTERM on any rank stops every rank at the same iteration. This script
starts ``torchrun --nproc_per_node 2`` (CPU, gloo) and, in those two
processes, trains runner_overhead's MLP (batch 32 per rank, lean Runner: no
logger, timer, checkpoint or progress hooks) for 512 iterations with
``signal_sync_interval`` 1 (the default) and 64, alternating, ``--rounds``
times; rank 0 prints the minimum over the rounds, in microseconds per
iteration.

    .venv/bin/python benchmarks/signal_sync.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

ITERS, BATCH, INTERVALS = 512, 32, (1, 64)


def worker(rounds: int) -> None:
    import torch  # noqa: PLC0415  (the driver does not import torch)
    from torch.utils.data import DataLoader, TensorDataset  # noqa: PLC0415

    from hookline import Runner  # noqa: PLC0415

    torch.set_num_threads(1)
    times: dict[int, list[float]] = {n: [] for n in INTERVALS}
    for round_ in range(rounds + 1):  # round 0 warms up
        for interval in INTERVALS:
            torch.manual_seed(0)
            data = TensorDataset(torch.randn(ITERS * BATCH * 2, 32),
                                 torch.randint(0, 10, (ITERS * BATCH * 2,)))
            model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                        torch.nn.Linear(64, 10))
            with tempfile.TemporaryDirectory() as work_dir:
                runner = Runner(model, optimizer={"type": "SGD", "lr": 0.01},
                                loss_fn=torch.nn.CrossEntropyLoss(), max_iters=ITERS,
                                train_dataloader=DataLoader(data, batch_size=BATCH),
                                work_dir=work_dir, signal_sync_interval=interval,
                                default_hooks={k: None for k in
                                               ("logger", "timer", "checkpoint", "progress")})
                start = time.perf_counter()
                runner.train()
                if round_:
                    times[interval].append((time.perf_counter() - start) / ITERS * 1e6)
    if runner.rank == 0:
        for interval in INTERVALS:
            print(f"signal_sync_interval={interval:<3} {min(times[interval]):8.1f} us / iteration",
                  flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.rounds)
        return 0
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}; torchrun "
          f"--nproc_per_node 2 (gloo, CPU), MLP 32-64-10, batch {BATCH} per rank, {ITERS} "
          f"iterations, lean Runner, min of {args.rounds} rounds")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node", "2", __file__, "--worker", "--rounds",
                           str(args.rounds)], env=env, capture_output=True, text=True,
                          timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("signal_sync")]
    print("\n".join(lines) if lines else proc.stdout[-2000:] + proc.stderr[-3000:])
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
