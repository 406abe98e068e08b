"""Where the Runner's time per iteration goes: the plain loop, the lean Runner, each default hook.

``runner_overhead.py`` compares whole runs, one process each, and on a busy
machine its rows move by several percent from run to run. This script asks
a narrower question precisely: how many microseconds per iteration each
layer adds. Every row trains the same MLP (runner_overhead's: 32-64-10, or
32-N-10 with ``--hidden N``; batch 32, SGD) for 4 epochs of 256 iterations
over the same pre-made batches, read through a
``DataLoader(batch_size=None)`` so that the data costs almost nothing and
costs every row the same. All rows run in one process, in a shuffled order
in each round; for each row the minimum over the rounds is kept, of the
wall time and of the training thread's own CPU time
(``time.thread_time``: what the background log and checkpoint writers take
is not in it, the wall time has it). One torch thread.

Rows:

* ``plain``: ``zero_grad(); loss_fn(model(x), y).backward(); step()``;
* ``lean``: a Runner without logger, timer, checkpoint and progress hooks
  (the loop, the step, the optimizer wrapper, the message hub, the
  scheduler and sampler-seed hooks);
* ``lean + timer`` / ``lean + logger`` / ``lean + checkpoint``: one default
  hook added back (logger every 10 iterations, a checkpoint every epoch);
* ``default``: the default hooks; ``default, inline log``: with
  ``LoggerHook(background=False)``.

With ``--ablations``, rows that take one part of a hook's work away (the
code is patched for that row only), to see what each part costs in a run:

* ``lean + logger, writer idle``: the log writer thread runs nothing (no
  averaging, line or record: only the training thread's share);
* ``lean + logger, no-op hook``: LoggerHook's ``after_train_iter`` does
  nothing (the cost of calling one more hook each iteration, plus the
  drains at epoch ends);
* ``lean + checkpoint, not written``: the checkpoint is serialised but the
  writer thread does not write it;
* ``lean + checkpoint, not saved``: ``save_checkpoint`` returns at once.

    .venv/bin/python benchmarks/iteration_breakdown.py [--rounds 9] [--ablations] > /dev/null

The runs' console lines go to stdout, as a Runner's do; the results go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils.data import DataLoader

from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs
from hookline import Runner
from hookline.engine.checkpoint import CheckpointWriter
from hookline.engine.log_writer import LogWriter
from hookline.hooks import LoggerHook

BATCH, EPOCHS, PER_EPOCH, LR = 32, 4, 256, 0.01
OFF = ("logger", "timer", "checkpoint", "progress")
ROWS: dict[str, dict[str, Any] | None] = {
    "plain": None,
    "lean": {k: None for k in OFF},
    "lean + timer": {k: None for k in OFF if k != "timer"},
    "lean + logger": {k: None for k in OFF if k != "logger"},
    "lean + checkpoint": {k: None for k in OFF if k != "checkpoint"},
    "default": {},
    "default, inline log": {"logger": {"background": False}},
}

def _nothing(*_args: Any, **_kwargs: Any) -> None:
    """The stand-in of a part taken away."""


def _saved_nowhere(_runner: Any, path: Any, **_kwargs: Any) -> Any:
    """``save_checkpoint`` taken away: the path, nothing saved."""
    return path


#: --ablations: row -> (default hooks, the part taken away: (owner, attribute, stand-in))
ABLATIONS: dict[str, tuple[dict[str, Any], tuple[Any, str, Callable[..., Any]]]] = {
    "lean + logger, writer idle": (ROWS["lean + logger"] or {}, (
        LogWriter, "submit", _nothing)),
    "lean + logger, no-op hook": (ROWS["lean + logger"] or {}, (
        LoggerHook, "after_train_iter", _nothing)),
    "lean + checkpoint, not written": (ROWS["lean + checkpoint"] or {}, (
        CheckpointWriter, "write", _nothing)),
    "lean + checkpoint, not saved": (ROWS["lean + checkpoint"] or {}, (
        Runner, "save_checkpoint", _saved_nowhere)),
}


@contextmanager
def taken_away(part: tuple[Any, str, Callable[..., Any]] | None) -> Iterator[None]:
    """Replace ``owner.attribute`` with the stand-in for one row's run."""
    if part is None:
        yield
        return
    owner, attribute, stand_in = part
    original = owner.__dict__[attribute]
    setattr(owner, attribute, stand_in)
    try:
        yield
    finally:
        setattr(owner, attribute, original)


HIDDEN = [64]  # the MLP's hidden width (--hidden)


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    hidden = HIDDEN[0]
    return torch.nn.Sequential(torch.nn.Linear(32, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, 10))


def make_batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [(torch.randn(BATCH, 32, generator=generator),
             torch.randint(0, 10, (BATCH,), generator=generator)) for _ in range(PER_EPOCH)]


def timed(train: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.thread_time()
    train()
    return time.perf_counter() - wall, time.thread_time() - cpu


def run_row(default_hooks: dict[str, Any] | None, batches: list[Any]) -> tuple[float, float]:
    """(wall s, training-thread CPU s) of one 4-epoch run of a row."""
    model = make_model()
    loader = DataLoader(batches, batch_size=None)  # pre-made batches, read one by one
    if default_hooks is None:
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        loss_fn = torch.nn.CrossEntropyLoss()

        def plain() -> None:
            for _ in range(EPOCHS):
                for inputs, targets in loader:
                    optimizer.zero_grad()
                    loss_fn(model(inputs), targets).backward()
                    optimizer.step()
        return timed(plain)
    with tempfile.TemporaryDirectory(prefix="breakdown-") as work_dir:
        runner = Runner(model, optimizer={"type": "SGD", "lr": LR},
                        loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=EPOCHS,
                        train_dataloader=loader, work_dir=work_dir,
                        default_hooks=default_hooks)
        result = timed(runner.train)
        assert runner.iter == EPOCHS * PER_EPOCH
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="runs of each row")
    parser.add_argument("--only", nargs="+", choices=list(ROWS) + list(ABLATIONS),
                        help="these rows (and plain)")
    parser.add_argument("--hidden", type=int, default=64,
                        help="the MLP's hidden width (64: runner_overhead's; wider: a bigger step)")
    parser.add_argument("--ablations", action="store_true",
                        help="add the rows that take one part of a hook's work away")
    args = parser.parse_args()
    if args.hidden < 1:
        parser.error(f"--hidden takes a positive width, got {args.hidden}")
    HIDDEN[0] = args.hidden
    torch.set_num_threads(1)
    logging.getLogger("hookline").propagate = False
    out = sys.stderr
    names = ["plain", *[n for n in (args.only or ROWS) if n != "plain"]]
    if args.ablations:
        names += [n for n in ABLATIONS if n not in names]
    rows = {**ROWS, **{name: hooks for name, (hooks, _) in ABLATIONS.items()}}

    def run(name: str) -> tuple[float, float]:
        with taken_away(ABLATIONS[name][1] if name in ABLATIONS else None):
            return run_row(rows[name], batches)

    batches = make_batches()
    iters = EPOCHS * PER_EPOCH
    print(f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
          f"torch {torch.__version__}, 1 torch thread", file=out)
    print(f"MLP 32-{args.hidden}-10, batch {BATCH}, {EPOCHS} epochs x {PER_EPOCH} pre-made batches "
          f"= {iters} iterations per run; {args.rounds} rounds, rows shuffled in each; "
          "min over rounds", file=out)
    for name in names:  # one unmeasured run each: imports, first allocations, caches
        run(name)
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    for round_ in range(args.rounds):
        order = names[:]
        random.Random(round_).shuffle(order)
        for name in order:
            wall, cpu = run(name)
            walls[name].append(wall)
            cpus[name].append(cpu)
    base_wall, base_cpu = min(walls["plain"]), min(cpus["plain"])
    print("\n| row | wall us / iter | over plain | thread CPU us / iter | over plain "
          "| x plain (CPU) |", file=out)
    print("|---|---|---|---|---|---|", file=out)
    for name in names:
        wall, cpu = min(walls[name]), min(cpus[name])
        print(f"| {name} | {wall / iters * 1e6:.1f} | {(wall - base_wall) / iters * 1e6:+.1f} | "
              f"{cpu / iters * 1e6:.1f} | {(cpu - base_cpu) / iters * 1e6:+.1f} | "
              f"{cpu / base_cpu:.3f} |", file=out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
