"""How many host-device synchronisations a CUDA training run makes, and where.

Trains on the GPU under ``torch.cuda.set_sync_debug_mode("warn")``, which
makes torch warn at every synchronising CUDA call (``.item()``, a copy to
the host, a blocking copy from pageable memory, ``cudaStreamSynchronize`` ...),
and counts the warnings by where they happened:

* a *quiet* iteration: one the logger does not write (from its
  ``before_train_iter`` to the next one's, so fetching the next batch counts);
* a *log* iteration: one with a line in ``metrics.jsonl``;
* *epoch ends*: from the last iteration's ``after_train_iter`` hooks to the next
  epoch's first iteration (epoch-end hooks, checkpoint, validation);
* *other threads*: syncs made off the training thread (the logger's writer
  thread averages each log step's values there), which the training thread
  does not wait for.

Configurations: the default hooks alone, and the default hooks with EMAHook,
CheckInvalidLossHook, GradientMonitorHook and a KerasCallback (the set the
GPU issue names), on the demo's DigitsCNN and on the ResNet-18-shaped CNN of
``runner_overhead.py`` (3x64x64 inputs), fast data path on and off. The
promise being measured: 0 syncs on quiet iterations. The same claim is a
test (``tests/hooks/test_host_syncs.py``, ``"error"`` mode on quiet iterations).

    python benchmarks/cuda_syncs.py            # needs a CUDA device
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import threading
import warnings
from collections import Counter
from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset

from _workloads import WORKLOADS, build_model  # benchmarks/ is on sys.path when a script here runs
from hookline import Hook, Runner
from hookline.demo.model import DigitsCNN
from hookline.hooks import CheckInvalidLossHook, EMAHook, GradientMonitorHook, KerasCallback

LOG_INTERVAL = 10
SYNC_WARNING = "synchronizing CUDA operation"


class Where(Hook):
    """Names the part of the run now executing: ``("iter", i)`` or ``("epoch end", e)``."""

    priority = "HIGHEST"

    def __init__(self) -> None:
        self.now: tuple[str, int] = ("setup", 0)

    def before_train_iter(self, runner, batch_idx, data_batch=None):  # noqa: ARG002
        self.now = ("iter", runner.iter)

    def after_train_epoch(self, runner):
        self.now = ("epoch end", runner.epoch)


class LossReader(KerasCallback):
    """A Keras callback the way users write one: counts batches, reads the loss at epoch end."""

    def __init__(self) -> None:
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):  # noqa: ARG002
        self.batches += 1

    def on_epoch_end(self, epoch, logs=None):  # noqa: ARG002
        self.last_loss = float(logs["loss"])


def _model(name: str) -> tuple[torch.nn.Module, tuple[int, ...]]:
    if name == "digits":
        return DigitsCNN(), (1, 8, 8)
    return build_model(torch, WORKLOADS["resnet18"]), WORKLOADS["resnet18"].input_shape


def count(model_name: str, extra_hooks: bool, fast_data: bool, epochs: int, batches: int,
          ) -> dict[str, float]:
    """One run; the sync counts by part of the run."""
    torch.manual_seed(0)
    model, shape = _model(model_name)
    n = 32 * batches
    data = TensorDataset(torch.randn(n, *shape), torch.randint(0, 10, (n,)))
    where = Where()
    extras = ([EMAHook(), CheckInvalidLossHook(interval=LOG_INTERVAL),
               GradientMonitorHook(interval=LOG_INTERVAL), LossReader()] if extra_hooks else [])
    with tempfile.TemporaryDirectory() as work_dir:
        runner = Runner(model, optimizer={"type": "SGD", "lr": 0.01, "momentum": 0.9},
                        loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=epochs, device="cuda",
                        train_dataloader=DataLoader(data, batch_size=32, shuffle=True,
                                                    pin_memory=True),
                        work_dir=work_dir, fast_data=fast_data, hooks=[where, *extras],
                        default_hooks={"logger": {"interval": LOG_INTERVAL}, "progress": None})
        syncs: Counter[tuple[str, int]] = Counter()
        shown = warnings.showwarning

        training_thread = threading.current_thread()

        def record(message, category, filename, lineno, file=None, line=None):
            if SYNC_WARNING in str(message):
                off = threading.current_thread() is not training_thread
                syncs[("other threads", 0) if off else where.now] += 1
            else:
                shown(message, category, filename, lineno, file, line)

        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = record
            torch.cuda.set_sync_debug_mode("warn")
            try:
                runner.train()
                torch.cuda.synchronize()  # outside the counted span: the counts are final
            finally:
                torch.cuda.set_sync_debug_mode("default")
        records = [json.loads(line) for line in
                   (Path(work_dir) / "metrics.jsonl").read_text().splitlines()]
    logged = {r["iter"] - 1 for r in records if r.get("mode") == "train"}
    iters = range(runner.iter)
    quiet = [i for i in iters if i not in logged]
    return {
        "iters": len(iters), "quiet": len(quiet), "logged": len(logged),
        "quiet_syncs": sum(syncs[("iter", i)] for i in quiet),
        "log_syncs_mean": sum(syncs[("iter", i)] for i in logged) / max(1, len(logged)),
        "epoch_end_syncs_mean": sum(syncs[("epoch end", e)] for e in range(1, epochs + 1)) / epochs,
        "setup_syncs": syncs[("setup", 0)],
        "other_thread_syncs": syncs[("other threads", 0)],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batches", type=int, default=40, help="batches (of 32) per epoch")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("cuda_syncs.py needs a CUDA device; this machine's torch sees none", file=sys.stderr)
        return 2
    print(f"machine: {torch.cuda.get_device_name()}; Python {platform.python_version()}, "
          f"torch {torch.__version__}")
    print(f"{args.epochs} epochs x {args.batches} batches of 32, logger every {LOG_INTERVAL} "
          "iterations, a checkpoint every epoch, SGD with momentum, pinned DataLoader\n")
    print("| model | hooks | data path | iterations (quiet / logged) | syncs on quiet iterations "
          "| syncs per log iteration | syncs per epoch end | before the first iteration "
          "| on other threads (in all) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model_name in ("digits", "resnet18"):
        for extra in (False, True):
            for fast in (True, False):
                c = count(model_name, extra, fast, args.epochs, args.batches)
                hooks = "default + EMA, invalid-loss, gradient monitor, Keras" if extra else "default"
                print(f"| {model_name} | {hooks} | {'fast' if fast else 'DataLoader'} | "
                      f"{c['iters']} ({c['quiet']} / {c['logged']}) | {c['quiet_syncs']} | "
                      f"{c['log_syncs_mean']:.1f} | {c['epoch_end_syncs_mean']:.1f} | "
                      f"{c['setup_syncs']} | {c['other_thread_syncs']} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
