"""Per-iteration hook dispatch of the Runner against the number of hooks, and MMEngine's.

What one training iteration dispatches, with N = 0 .. 128 hooks (Hook
subclasses, no-op bodies), in two cases: every hook overrides one stage
(``after_train_iter``), or none (hooks that only act at other stages,
e.g. once an epoch):

* hookline: the stage calls of ``TrainLoop.run_iter``
  (src/hookline/engine/loops.py), statement for statement: ``before_train_iter``
  and ``after_train_iter`` through ``runner.hooks.callers`` when the stage has
  hooks; then the same plus the five events ``OptimWrapper.update_params``
  emits each iteration (``before_update``, ``before_backward``,
  ``after_backward``, ``before_step``, ``before_zero_grad``; nobody listens),
  on a real ``HookTable`` and ``OptimWrapper``;
* MMEngine (when importable: ``make bench`` installs it into ``.venv-bench``):
  its ``Runner.call_hook`` (``mmengine.runner.Runner.call_hook``, called
  unbound on an object with the runner's ``_hooks`` list) for
  ``before_train_iter`` and ``after_train_iter``, as its train loops call it.
  MMEngine calls every hook at every stage (its base class defines each stage
  as a no-op); it has no optimizer-wrapper events.

Microseconds per iteration (min / median of ``--repeat`` interleaved batches,
process CPU time).

    .venv-bench/bin/python benchmarks/dispatch_scaling.py [--repeat 15] [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import timeit
import types
from importlib import metadata
from typing import Any

import torch

from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs
from hookline import Hook
from hookline.engine.hook_table import HookTable
from hookline.engine.optim_wrapper import OptimWrapper

SIZES = (0, 1, 2, 4, 8, 16, 32, 64, 128)
CASES = ("one stage", "none")
OPTIM_EVENTS = ("before_update", "before_backward", "after_backward", "before_step",
                "before_zero_grad")


class Stage(Hook):
    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        pass


class Elsewhere(Hook):
    def after_train_epoch(self, runner):
        pass


def hookline_iteration(n: int, case: str, with_optim: bool) -> Any:
    """A function doing what ``TrainLoop.run_iter`` dispatches in one iteration."""
    table = HookTable()
    for _ in range(n):
        table.add(Stage() if case == "one stage" else Elsewhere())
    runner = types.SimpleNamespace(hooks=table)
    wrapper = OptimWrapper(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1))
    loss = torch.zeros(())
    data_batch, outputs = [1, 2], {"loss": loss}

    def iteration(batch_idx: int = 3) -> None:
        hooks = runner.hooks
        stages = hooks.stages
        if stages["before_train_iter"]:
            hooks.callers["before_train_iter"](runner, batch_idx=batch_idx, data_batch=data_batch)
        if stages["after_train_iter"]:
            hooks.callers["after_train_iter"](runner, batch_idx=batch_idx, data_batch=data_batch,
                                              outputs=outputs)

    def with_events(batch_idx: int = 3) -> None:
        iteration(batch_idx)
        wrapper.before_update.emit(loss)
        wrapper.before_backward.emit(loss)
        wrapper.after_backward.emit()
        wrapper.before_step.emit()
        wrapper.before_zero_grad.emit()

    return with_events if with_optim else iteration


def mmengine_iteration(n: int, case: str) -> Any:
    """A function doing what MMEngine's train loops dispatch in one iteration, or None."""
    try:
        from mmengine.hooks import Hook as MMHook  # noqa: PLC0415 - optional
        from mmengine.runner import Runner as MMRunner  # noqa: PLC0415
    except ImportError:
        return None

    class MMStage(MMHook):
        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            pass

    class MMElsewhere(MMHook):
        def after_train_epoch(self, runner):
            pass

    runner = types.SimpleNamespace(_hooks=[MMStage() if case == "one stage" else MMElsewhere()
                                           for _ in range(n)])
    call_hook = MMRunner.call_hook
    data_batch, outputs = [1, 2], {"loss": torch.zeros(())}

    def iteration(batch_idx: int = 3) -> None:
        call_hook(runner, "before_train_iter", batch_idx=batch_idx, data_batch=data_batch)
        call_hook(runner, "after_train_iter", batch_idx=batch_idx, data_batch=data_batch,
                  outputs=outputs)

    return iteration


def measure(functions: dict[Any, Any], repeat: int, quick: bool) -> dict[Any, tuple[float, float]]:
    """(min, median) microseconds per call of each function, interleaved batches, CPU time."""
    timers, numbers = {}, {}
    for key, fn in functions.items():
        timers[key] = timer = timeit.Timer("f()", timer=time.process_time, globals={"f": fn})
        numbers[key] = 50 if quick else max(1, timer.autorange()[0] // 4)
    samples: dict[Any, list[float]] = {key: [] for key in timers}
    for _ in range(repeat):
        for key, timer in timers.items():
            samples[key].append(timer.timeit(numbers[key]) / numbers[key] * 1e6)
    return {key: (min(s), statistics.median(s)) for key, s in samples.items()}


def cell(times: tuple[float, float] | None) -> str:
    return "n/a" if times is None else f"{times[0]:.2f} / {times[1]:.2f}"


def machine() -> str:
    try:
        mm = f"mmengine {metadata.version('mmengine')}"
    except metadata.PackageNotFoundError:
        mm = "mmengine not installed"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
            f"torch {torch.__version__}, {mm}; load average at start {load:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed batches per figure")
    parser.add_argument("--quick", action="store_true", help="far fewer calls (smoke test)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args(argv)

    functions: dict[Any, Any] = {}
    for case in CASES:
        for n in args.sizes:
            functions["hookline", case, n] = hookline_iteration(n, case, with_optim=False)
            functions["hookline+optim", case, n] = hookline_iteration(n, case, with_optim=True)
            mm = mmengine_iteration(n, case)
            if mm is not None:
                functions["mmengine", case, n] = mm
    results = measure(functions, args.repeat, args.quick)

    print(f"machine: {machine()}\n")
    print("Microseconds per training iteration spent dispatching hooks (min / median over "
          f"{args.repeat} batches): before_train_iter + after_train_iter; "
          "'+ optim events' adds the five OptimWrapper events of one update.\n")
    for case in CASES:
        title = ("every hook overrides after_train_iter" if case == "one stage"
                 else "no hook overrides an iteration stage")
        print(f"**{title}**\n")
        print("| N hooks | hookline | hookline + optim events | MMEngine call_hook "
              "| MMEngine / hookline |")
        print("|---:|---:|---:|---:|---:|")
        for n in args.sizes:
            ours, mm = results["hookline", case, n], results.get(("mmengine", case, n))
            ratio = f"{mm[0] / ours[0]:.1f}x" if mm is not None else "n/a"
            print(f"| {n} | {cell(ours)} | {cell(results['hookline+optim', case, n])} "
                  f"| {cell(mm)} | {ratio} |")
        print()
    print("command: " + " ".join([os.path.relpath(sys.executable), *sys.argv]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
