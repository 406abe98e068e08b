"""Hook dispatch speed: hookline.core against a plain loop, pluggy and blinker.

Measures, in one run:

* nanoseconds per hook call for ``Event.emit`` (a function generated for the
  event's hooks, see ``hookline.core._emitter``) with N = 0, 1, 8, 32 no-op
  hooks, against a plain ``for f in hooks: f(x)`` loop, pluggy
  (``pm.hook.ping(x=...)``) and blinker (``signal.send(x)``). Every hook takes
  one argument, since pluggy and blinker always pass one. N = 0 reports the
  cost of one emission with nobody listening;
* the call overhead of ``@hookable`` with no hooks registered, on a function
  and on a method, against the bare function and method (and, for scale,
  with one post hook).

Each figure is the min and the median over several short ``timeit`` batches,
interleaved across contenders and timed in process CPU time, so that other
processes on a busy machine do not inflate them.

    .venv/bin/pip install -c constraints.txt pluggy blinker   # the `bench` extra
    .venv/bin/python benchmarks/dispatch.py [--repeat 15] [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from importlib import metadata
from typing import Optional

from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs
from hookline.core import Event, hookable

SIZES = (0, 1, 8, 32)


def make_hooks(n: int) -> list[Callable]:
    """N distinct no-op functions of one argument."""
    hooks = []
    for _ in range(n):
        def hook(x):  # noqa: ARG001 - pluggy passes hook arguments by name: it must be `x`
            return None
        hooks.append(hook)
    return hooks


# Each builder returns (statement, namespace) for timeit, or None when the
# library is missing. Statements are timed as written, with no wrapper call.
Stmt = Optional[tuple[str, dict]]


def plain_loop(hooks: list[Callable]) -> Stmt:
    return "for f in hooks: f(1)", {"hooks": hooks}


def hookline_emit(hooks: list[Callable]) -> Stmt:
    event = Event("ping")
    for hook in hooks:
        event.register(hook)
    return "event.emit(1)", {"event": event}


def pluggy_call(hooks: list[Callable]) -> Stmt:
    try:
        import pluggy  # noqa: PLC0415 - optional (the bench extra)
    except ImportError:
        return None
    spec = pluggy.HookspecMarker("bench")
    impl = pluggy.HookimplMarker("bench")

    class Spec:
        @spec
        def ping(self, x):
            """The benchmarked hook."""

    pm = pluggy.PluginManager("bench")
    pm.add_hookspecs(Spec)
    for hook in hooks:
        plugin = type("Plugin", (), {"ping": staticmethod(impl(hook))})
        pm.register(plugin())
    return "pm.hook.ping(x=1)", {"pm": pm}


def blinker_send(hooks: list[Callable]) -> Stmt:
    try:
        import blinker  # noqa: PLC0415 - optional (the bench extra)
    except ImportError:
        return None
    signal = blinker.Signal()
    for hook in hooks:
        signal.connect(hook, weak=False)
    return "signal.send(1)", {"signal": signal}


def measure_all(stmts: dict, repeat: int, quick: bool) -> dict:
    """(min, median) nanoseconds per execution of each ``(statement, namespace)``.

    Each statement runs in ``repeat`` short timed batches (about 50 ms each),
    interleaved with the other statements, so that a burst of load on the
    machine hits every contender alike. Batches are timed in CPU time of this
    process (``time.process_time``), so time spent waiting while other
    processes run is not counted; the min is the least disturbed figure.
    """
    timers, numbers = {}, {}
    for key, built in stmts.items():
        if built is None:
            continue
        timers[key] = timer = timeit.Timer(built[0], timer=time.process_time, globals=built[1])
        if quick:
            numbers[key] = 100
        else:
            number, _ = timer.autorange()  # enough executions for >= 0.2 s
            numbers[key] = max(1, number // 4)
    samples: dict = {key: [] for key in timers}
    for _ in range(repeat):
        for key, timer in timers.items():
            samples[key].append(timer.timeit(numbers[key]) / numbers[key] * 1e9)
    return {key: (min(samples[key]), statistics.median(samples[key])) if key in samples else None
            for key in stmts}


def cell(times: tuple[float, float] | None, per: int = 1) -> str:
    if times is None:
        return "n/a"
    low, mid = times
    return f"{low / per:.1f} / {mid / per:.1f}"


def dispatch_table(repeat: int, quick: bool) -> tuple[list[str], dict]:
    contenders = {
        "plain loop": plain_loop,
        "Event.emit": hookline_emit,
        "pluggy": pluggy_call,
        "blinker": blinker_send,
    }
    stmts = {}
    for n in SIZES:
        hooks = make_hooks(n)
        for label, build in contenders.items():
            stmts[label, n] = build(hooks)
    results = measure_all(stmts, repeat, quick)
    lines = [
        "| N hooks | " + " | ".join(contenders) + " | emit / loop | pluggy / emit |",
        "|---:|" + "---:|" * (len(contenders) + 2),
    ]
    for n in SIZES:
        per = max(n, 1)
        row = [cell(results[label, n], per) for label in contenders]
        emit, loop, plug = results["Event.emit", n], results["plain loop", n], results["pluggy", n]
        ratio_loop = f"{emit[0] / loop[0]:.2f}x" if n else "-"
        ratio_plug = f"{plug[0] / emit[0]:.1f}x" if plug is not None else "n/a"
        label = f"{n}" if n else "0 (ns per emission)"
        lines.append(f"| {label} | " + " | ".join(row) + f" | {ratio_loop} | {ratio_plug} |")
    return lines, results


class Plain:
    def method(self, x):
        return x


class Hooked:
    @hookable
    def method(self, x):
        return x


def bare_function(x):
    return x


hooked_function = hookable(bare_function)


def hookable_table(repeat: int, quick: bool) -> tuple[list[str], dict]:
    with_post = hookable(bare_function)
    with_post.post(lambda _result, _args, _kwargs: None)
    namespace = {"bare_function": bare_function, "hooked_function": hooked_function,
                 "plain": Plain(), "hooked": Hooked(), "with_post": with_post}
    rows = [
        ("function, no hooks", "bare_function(1)", "hooked_function(1)"),
        ("method, no hooks", "plain.method(1)", "hooked.method(1)"),
        ("function, one post hook", "bare_function(1)", "with_post(1)"),
    ]
    lines = [
        "| call | bare | @hookable | overhead (min) |",
        "|---|---:|---:|---:|",
    ]
    stmts = {}
    for label, bare_stmt, hooked_stmt in rows:
        stmts[label, "bare"] = (bare_stmt, namespace)
        stmts[label, "hooked"] = (hooked_stmt, namespace)
    results = measure_all(stmts, repeat, quick)
    for label, _, _ in rows:
        bare, hook = results[label, "bare"], results[label, "hooked"]
        lines.append(f"| {label} | {cell(bare)} | {cell(hook)} | +{hook[0] - bare[0]:.0f} ns |")
    return lines, results


def machine() -> str:
    model = cpu_model()
    versions = []
    for name in ("pluggy", "blinker"):
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} not installed")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} cores, {model}, Python {platform.python_version()} "
            f"({platform.python_implementation()}), {', '.join(versions)}; "
            f"load average at start {load:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed batches per figure")
    parser.add_argument("--quick", action="store_true", help="far fewer calls (smoke test)")
    args = parser.parse_args(argv)

    print(f"machine: {machine()}\n")
    print("Nanoseconds per hook call (min / median over "
          f"{args.repeat} batches); each hook is a no-op taking one argument.\n")
    lines, results = dispatch_table(args.repeat, args.quick)
    print("\n".join(lines))
    print("\nNanoseconds per call (min / median) of a one-argument function or method "
          "returning its argument.\n")
    lines, _ = hookable_table(args.repeat, args.quick)
    print("\n".join(lines))

    emit, loop, plug = results["Event.emit", 8], results["plain loop", 8], results["pluggy", 8]
    print(f"\nN = 8: Event.emit is {emit[0] / loop[0]:.2f}x the plain loop (target <= 1.2x)", end="")
    if plug is not None:
        print(f", pluggy is {plug[0] / emit[0]:.1f}x Event.emit (target >= 8x)", end="")
    print(".")
    return 0


if __name__ == "__main__":
    sys.exit(main())
