"""A run that logs every iteration, ended one way or another (run as a script by
tests/hooks/test_logger_records.py).

    python log_records_script.py WORK_DIR MODE [--at N] [--foreground]

MODE: ``normal`` (40 iterations), ``raise`` (a hook raises after iteration N is logged),
``exit`` (a hook calls ``sys.exit(3)`` there), ``sigterm`` (a hook slows every iteration
down by 2 ms, so that the parent can send SIGTERM while the run is going; ``--at`` is not
used). The console lines go to stdout; ``--foreground`` writes them on the training thread.
A handler of the Runner's logger takes 20 ms a record, so the writer thread lags behind the
training thread: records still queued when the run ends must be written all the same.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner


class EndAt(Hook):
    """After iteration ``at`` was logged (LOWEST: after the LoggerHook), end the run."""

    priority = "LOWEST"

    def __init__(self, mode: str, at: int) -> None:
        self.mode, self.at = mode, at

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if self.mode == "sigterm":
            time.sleep(0.002)  # pacing only: the parent signals while the run goes on
        elif runner.iter + 1 == self.at:
            if self.mode == "raise":
                raise RuntimeError(f"stopped on purpose at iteration {self.at}")
            if self.mode == "exit":
                sys.exit(3)


class SlowHandler(logging.Handler):
    """Takes 20 ms a record (a slow disk or terminal)."""

    def emit(self, record: logging.LogRecord) -> None:
        time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work_dir")
    parser.add_argument("mode", choices=["normal", "raise", "exit", "sigterm"])
    parser.add_argument("--at", type=int, default=17)
    parser.add_argument("--foreground", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = TensorDataset(torch.randn(80, 6), torch.randint(0, 3, (80,)))
    iters = 10_000 if args.mode == "sigterm" else 40
    runner = Runner(torch.nn.Linear(6, 3), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_iters=iters,
                    train_dataloader=DataLoader(data, batch_size=4, shuffle=True),
                    work_dir=args.work_dir, hooks=[EndAt(args.mode, args.at)],
                    default_hooks={"logger": {"type": "LoggerHook", "interval": 1,
                                              "background": not args.foreground},
                                   "checkpoint": None, "progress": None})
    runner.logger.addHandler(SlowHandler())
    runner.train()


if __name__ == "__main__":
    main()
