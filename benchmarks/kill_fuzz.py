"""Random kill fuzz: SIGKILL ``hookline train`` at random moments, resume, compare with a run
never killed.

For each config (the packaged demo, and a "rich" one: warm-up + cosine schedule, EMA,
gradient accumulation over 2 iterations, early stopping, a checkpoint every iteration with
keep-3 and a best file), the script

1. trains it once, uninterrupted: the reference;
2. runs ``--trials`` trials, each in a fresh work dir: ``hookline train CONFIG --resume auto``
   is started and SIGKILLed at a random point (seeded: after a random number of its output
   lines, plus 0-300 ms), 2 or 3 times, then run to the end (a resumed run may finish
   before its kill point: more trials run until ``--min-kills`` kills landed);
3. compares each trial's final state (model, optimizer, every hook's state, RNG state and
   position, dumped by a hook at ``after_train``) with the reference's, bit for bit, and its
   work dir with the reference's: a checkpoint or temp file the reference does not have is
   a leak.

It prints, per config and in total: kills, resumes (runs that logged ``resumed from``),
failed runs (a run that should have finished and did not), bit-identical finals, leaked
files; and how often the fault paths ran: runs that removed temp files of a write a kill
interrupted, keep-N deletions a kill left undone and a resumed run finished, checkpoints
skipped by ``resume="auto"``. The kills land anywhere: in Python start-up, building,
training, validation, in the middle of a checkpoint write (the background writer's fsync
included), the ``latest`` pointer, keep-N deletions. Not part of ``make test``: it takes minutes.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/kill_fuzz.py [--trials 8] [--seed 0] [--min-kills 30]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import torch
import yaml

from _machine import cpu_model

PARTS = '''
import time

import torch

from hookline import Hook
from hookline.engine.checkpoint import collect
from hookline.engine.registries import HOOKS


@HOOKS.register(force=True)
class FuzzPace(Hook):
    """Slows each iteration down a little, so that random kills spread over the training."""

    def __init__(self, seconds=0.005):
        self.seconds = seconds

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        time.sleep(self.seconds)


@HOOKS.register(force=True)
class DumpFinal(Hook):
    """Saves the run's whole state when training ends, next to the work dir."""

    priority = "LOWEST"

    def after_train(self, runner):
        state = collect(runner)
        meta = state.pop("meta")
        state["position"] = [meta["epoch"], meta["iter"], meta["batch"], meta["stop_training"]]
        torch.save(state, str(runner.work_dir) + ".final.pt")
'''

RICH = {
    "custom_imports": ["fuzz_parts"],
    "model": {"type": "DigitsCNN"},
    "loss_fn": {"type": "CrossEntropyLoss"},
    "optim_wrapper": {"optimizer": {"type": "SGD", "lr": 0.05, "momentum": 0.9},
                      "accumulative_counts": 2},
    "param_scheduler": [
        {"type": "LinearLR", "start_factor": 0.1, "total_iters": 20, "by_epoch": False},
        {"type": "CosineAnnealingLR", "T_max": 150, "by_epoch": False},
    ],
    "train_dataloader": {"dataset": {"type": "DigitsDataset", "split": "train"},
                         "batch_size": 96, "shuffle": True},
    "val_dataloader": {"dataset": {"type": "DigitsDataset", "split": "val"}, "batch_size": 359},
    "metrics": {"accuracy": "accuracy"},
    "max_epochs": 10,
    "seed": 3,
    "num_threads": 1,
    "default_hooks": {
        "progress": None,
        "logger": {"interval": 5},
        "checkpoint": {"by_epoch": False, "interval": 1, "max_keep_ckpts": 3,
                       "save_best": "accuracy"},
    },
    "hooks": [
        {"type": "EMAHook", "decay": 0.9},
        {"type": "EarlyStoppingHook", "monitor": "accuracy", "min_delta": 0.05, "patience": 1},
        {"type": "FuzzPace", "seconds": 0.01},
        {"type": "DumpFinal"},
    ],
}

KEPT_OUTPUTS = {"log.txt", "metrics.jsonl", "config.yaml", "curves.png"}


def demo_config() -> dict:
    from hookline.app import load_config  # noqa: PLC0415  (the parent needs no hookline otherwise)
    from hookline.demo.registry import demo_config_path  # noqa: PLC0415

    cfg = load_config(demo_config_path())
    cfg["custom_imports"] = ["fuzz_parts"]
    cfg["default_hooks"] = {**cfg["default_hooks"], "progress": None}
    cfg["hooks"] = [{"type": "FuzzPace", "seconds": 0.005}, {"type": "DumpFinal"}]
    return cfg


def start(folder: Path, config: str, work_dir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "hookline.cli", "train", config, "--work-dir", str(work_dir),
         "--resume", "auto", "--no-curves"], cwd=folder,
        env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def same(a: object, b: object) -> bool:
    """Bit-identical, recursively (tensors with torch.equal and the same dtype)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) \
            and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def files(work_dir: Path) -> set[str]:
    return {p.name for p in work_dir.iterdir() if p.is_file() and p.name not in KEPT_OUTPUTS}


def reference(folder: Path, config: str) -> tuple[dict, set[str], range, float]:
    """The uninterrupted run: its final state, its files, the numbers of its output lines
    from the first training log line to the end, its seconds."""
    work_dir = folder / f"ref_{Path(config).stem}"
    begin = time.monotonic()
    proc = start(folder, config, work_dir)
    lines = proc.communicate()[0].splitlines()
    if proc.returncode != 0:
        raise SystemExit(f"the reference run of {config} failed")
    final = torch.load(str(work_dir) + ".final.pt", weights_only=True)
    first = next(i for i, line in enumerate(lines) if "(train)" in line)
    return final, files(work_dir), range(first, len(lines) + 1), time.monotonic() - begin


class Fuzz:
    """One config: its reference run, then trials, counting what happened.

    A kill lands after a random number of the run's output lines (the hook table, then a
    log line every few iterations), drawn from the reference run's training lines (the
    first training log line, a few iterations in, comes later), plus a random 0-300 ms: a
    point in the run's progress, whatever the machine's load. A resumed run prints fewer
    lines, so some runs finish before their kill point."""

    def __init__(self, folder: Path, config: str, draw: random.Random) -> None:
        self.folder, self.config, self.draw = folder, config, draw
        self.final, self.expected, self.lines, seconds = reference(folder, config)
        self.counts = dict(kills=0, runs=0, resumes=0, failed=0, identical=0, finals=0,
                           leaked=0, temp_files_removed=0, deletions_finished=0,
                           checkpoints_skipped=0)
        self.trials = 0
        print(f"{config}: reference run {seconds:.1f} s, training output on lines {self.lines.start}"
              f" to {self.lines.stop - 1}, stop at "
              f"{self.final['position']}, files {sorted(self.expected)}", flush=True)

    def _run(self, work_dir: Path, kill_after: int | None) -> None:
        proc = start(self.folder, self.config, work_dir)
        assert proc.stdout is not None
        seen: list[str] = []
        if kill_after is not None:
            for line in proc.stdout:
                seen.append(line)
                if len(seen) >= kill_after:
                    time.sleep(self.draw.uniform(0.0, 0.3))
                    break
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                self.counts["kills"] += 1
        output = "".join(seen) + proc.communicate()[0]
        self.counts["runs"] += 1
        self.counts["resumes"] += "resumed from" in output
        self.counts["temp_files_removed"] += "unfinished checkpoint write" in output
        self.counts["deletions_finished"] += "the deletion an interrupted run left" in output
        self.counts["checkpoints_skipped"] += output.count("skipping checkpoint")
        if proc.returncode not in ((0, -signal.SIGKILL) if kill_after is not None else (0,)):
            self.counts["failed"] += 1
            print(f"  {work_dir.name}: run ended with {proc.returncode}:\n"
                  + textwrap.indent(output[-2000:], "    "), flush=True)

    def trial(self) -> None:
        """A fresh work dir: 2 or 3 runs SIGKILLed at random points, then one to the end."""
        work_dir = self.folder / f"{Path(self.config).stem}_{self.trials}"
        self.trials += 1
        for _ in range(self.draw.randint(2, 3)):
            self._run(work_dir, self.draw.choice(self.lines))
        failed = self.counts["failed"]
        self._run(work_dir, None)
        if self.counts["failed"] > failed:
            return
        self.counts["finals"] += 1
        identical = same(torch.load(str(work_dir) + ".final.pt", weights_only=True), self.final)
        self.counts["identical"] += identical
        leaked = sorted(files(work_dir) - self.expected)
        self.counts["leaked"] += len(leaked)
        print(f"  {work_dir.name}: {'bit-identical' if identical else 'DIFFERENT'} final, "
              f"leaked {leaked or 'nothing'}, missing "
              f"{sorted(self.expected - files(work_dir)) or 'nothing'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=8, help="trials per config")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-kills", type=int, default=30,
                        help="run more trials until this many kills landed")
    args = parser.parse_args()
    draw = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="hookline-kill-fuzz-"))
    (folder / "fuzz_parts.py").write_text(PARTS)
    (folder / "demo.yaml").write_text(yaml.safe_dump(demo_config(), sort_keys=False))
    (folder / "rich.yaml").write_text(yaml.safe_dump(RICH, sort_keys=False))
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__}; "
          f"seed {args.seed}; work in {folder}", flush=True)
    fuzzes = [Fuzz(folder, config, draw) for config in ("demo.yaml", "rich.yaml")]
    for fuzz in fuzzes:
        for _ in range(args.trials):
            fuzz.trial()
    extra = 0
    while sum(f.counts["kills"] for f in fuzzes) < args.min_kills and extra < 4 * args.trials:
        min(fuzzes, key=lambda f: f.counts["kills"]).trial()  # a run may finish before its kill
        extra += 1
    totals: dict[str, int] = {}
    for fuzz in fuzzes:
        print(f"{fuzz.config}: " + ", ".join(f"{k} {v}" for k, v in fuzz.counts.items()),
              flush=True)
        for key, value in fuzz.counts.items():
            totals[key] = totals.get(key, 0) + value
    print(f"total: kills {totals['kills']}, resumes {totals['resumes']}, failed runs "
          f"{totals['failed']}, bit-identical finals {totals['identical']}/{totals['finals']}, "
          f"leaked files {totals['leaked']}")


if __name__ == "__main__":
    main()
