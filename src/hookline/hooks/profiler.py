"""ProfilerHook: ``torch.profiler`` over chosen training iterations, saved as traces
that TensorBoard's profiler plugin and Chrome (``chrome://tracing``, Perfetto) open.

Example::

    >>> from hookline.hooks import ProfilerHook
    >>> hook = ProfilerHook(wait=1, warmup=1, active=3)
    >>> hook.profiled_iters()  # 1-based training iterations of this run that are recorded
    [3, 4, 5]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch.profiler import ProfilerAction, ProfilerActivity

from hookline.core import ConfigError
from hookline.engine.checks import boolean, non_negative_int, positive_int
from hookline.engine.environment import check_writable_folder
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

_ACTIVITIES = {"cpu": ProfilerActivity.CPU, "cuda": ProfilerActivity.CUDA}
# torch >= 2.4 calls it "device" time; older versions only have the "cuda" name
_DEVICE_SORT = ("self_device_time_total"
                if hasattr(torch.autograd.profiler_util.FunctionEventAvg(), "self_device_time_total")
                else "self_cuda_time_total")


def _activities(spec: Sequence[Any] | None) -> list[ProfilerActivity] | None:
    if spec is None:
        return None
    if isinstance(spec, (str, ProfilerActivity)):
        spec = [spec]
    out = []
    for item in spec:
        if isinstance(item, ProfilerActivity):
            out.append(item)
        elif isinstance(item, str) and item.lower() in _ACTIVITIES:
            out.append(_ACTIVITIES[item.lower()])
        else:
            raise ConfigError(f"ProfilerHook activities must be a list of 'cpu' / 'cuda' (or "
                              f"torch.profiler.ProfilerActivity), got {item!r} in {spec!r}")
    if not out:
        raise ConfigError("ProfilerHook activities is empty: give ['cpu'], ['cuda'] or both, "
                          "or None for CPU plus CUDA when the run uses a GPU")
    return out


def _check_supported(activities: Sequence[ProfilerActivity]) -> None:
    """Activities this machine cannot profile (CUDA without a GPU) are one ConfigError before
    training; torch would fail at the first profiled step, inside the run. Checked when the
    run starts, so that a GPU config still builds on a CPU machine (``hookline hooks``)."""
    supported = set(torch.profiler.supported_activities())
    missing = [a for a in activities if a not in supported]
    if missing:
        names = ", ".join(a.name.lower() for a in missing)
        raise ConfigError(f"ProfilerHook activities: {names} cannot be profiled on this machine "
                          f"(it can: {', '.join(sorted(a.name.lower() for a in supported))}); "
                          "leave activities out to profile what the run uses")


@HOOKS.register()
class ProfilerHook(Hook):
    """Profiles training iterations with ``torch.profiler`` and writes one trace per cycle.

    The schedule is ``torch.profiler.schedule``: after ``skip_first``
    iterations, each cycle idles ``wait`` iterations, warms up ``warmup``
    (recorded, then discarded) and records ``active``; ``repeat`` cycles
    (0: until training ends). Each recorded cycle is written to ``out_dir``
    by ``torch.profiler.tensorboard_trace_handler`` as
    ``<worker>.<timestamp>.pt.trace.json``: a Chrome trace (JSON with
    ``traceEvents``) that TensorBoard (``tensorboard --logdir out_dir`` with
    the torch-tb-profiler plugin), ``chrome://tracing`` and Perfetto open.
    A step covers a whole iteration: fetching the batch, the step, and every
    ``after_train_iter`` hook (this hook runs last). Every process profiles
    itself (worker name ``rank<N>``). If training ends during an active
    window, what was recorded is written.

    Args:
        wait, warmup, active, repeat, skip_first: the schedule (see above).
        activities: ``["cpu"]``, ``["cuda"]`` or both; None: CPU, plus CUDA when
            the run's device is a GPU.
        record_shapes, profile_memory, with_stack, with_flops: passed to
            ``torch.profiler.profile``.
        out_dir: folder for the traces (default ``work_dir/profiler``).
        row_limit: after each cycle, log the top ``row_limit`` operators by
            self time (0: do not log a table).

    Example::

        >>> from hookline import HOOKS
        >>> HOOKS.build({"type": "ProfilerHook", "active": 2, "activities": ["cpu"]}).active
        2
    """

    priority = "LOWEST"

    def __init__(self, wait: int = 1, warmup: int = 1, active: int = 3, repeat: int = 1,
                 skip_first: int = 0, activities: Sequence[Any] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 out_dir: str | Path | None = None, row_limit: int = 10) -> None:
        owner = "ProfilerHook"
        self.wait = non_negative_int(wait, "wait", owner=owner)
        self.warmup = non_negative_int(warmup, "warmup", owner=owner)
        self.active: int = positive_int(active, "active", owner=owner)
        self.repeat = non_negative_int(repeat, "repeat", owner=owner)
        self.skip_first = non_negative_int(skip_first, "skip_first", owner=owner)
        self.row_limit = non_negative_int(row_limit, "row_limit", owner=owner)
        self.activities = _activities(activities)
        self.record_shapes = boolean(record_shapes, "record_shapes", owner=owner)
        self.profile_memory = boolean(profile_memory, "profile_memory", owner=owner)
        self.with_stack = boolean(with_stack, "with_stack", owner=owner)
        self.with_flops = boolean(with_flops, "with_flops", owner=owner)
        if out_dir is not None and not isinstance(out_dir, (str, Path)):
            raise ConfigError(f"ProfilerHook out_dir must be a path or None, got {out_dir!r}")
        self.out_dir = check_writable_folder(out_dir, "ProfilerHook out_dir") \
            if out_dir is not None else None
        self.profiler: torch.profiler.profile | None = None
        self.traces: list[Path] = []
        self._steps = 0
        self._last_iter = 0  # the 1-based iteration the last step() closed
        self._stopping = False
        self._schedule: Callable[[int], ProfilerAction] = torch.profiler.schedule(
            wait=self.wait, warmup=self.warmup, active=self.active, repeat=self.repeat,
            skip_first=self.skip_first)

    def __repr__(self) -> str:
        return (f"ProfilerHook(wait={self.wait}, warmup={self.warmup}, active={self.active}, "
                f"repeat={self.repeat})")

    def profiled_iters(self) -> list[int]:
        """The iterations (1-based, counted from the start of this ``train()``) that are
        recorded; with ``repeat=0`` the first three cycles are listed."""
        cycle = self.wait + self.warmup + self.active
        iters: list[int] = []
        for n in range(self.repeat or 3):
            first = self.skip_first + n * cycle + self.wait + self.warmup + 1
            iters += range(first, first + self.active)
        return iters

    # -- stages -----------------------------------------------------------------------
    def before_train(self, runner: Runner) -> None:
        out_dir = self.out_dir if self.out_dir is not None else check_writable_folder(
            runner.work_dir / "profiler", "ProfilerHook's folder (out_dir=None: work_dir/profiler)")
        activities = self.activities
        if activities is None:
            activities = [ProfilerActivity.CPU]
            if runner.device.type == "cuda" and torch.cuda.is_available():
                activities.append(ProfilerActivity.CUDA)
        _check_supported(activities)
        handler = torch.profiler.tensorboard_trace_handler(
            str(out_dir), worker_name=f"rank{runner.rank}")

        def on_trace_ready(prof: torch.profiler.profile) -> None:
            if self._stopping and not self._recorded_before_stop():  # a window just opened
                runner.logger.info("ProfilerHook: training ended before iteration %d, the "
                                   "first of a profiled window: no trace written",
                                   self._last_iter + 1)
                return
            before = set(out_dir.glob("*.pt.trace.json*")) if out_dir.is_dir() else set()
            handler(prof)
            new = sorted(set(out_dir.glob("*.pt.trace.json*")) - before)
            self.traces += new
            runner.logger.info("ProfilerHook: trace of iterations up to %d written to %s",
                               self._last_iter, ", ".join(map(str, new)) or out_dir)
            if self.row_limit:
                sort_by = _DEVICE_SORT if ProfilerActivity.CUDA in activities \
                    else "self_cpu_time_total"
                runner.logger.info("ProfilerHook: top operators by %s:\n%s", sort_by,
                                   prof.key_averages().table(sort_by=sort_by,
                                                             row_limit=self.row_limit))

        self.profiler = torch.profiler.profile(
            activities=activities, schedule=self._schedule,
            on_trace_ready=on_trace_ready, record_shapes=self.record_shapes,
            profile_memory=self.profile_memory, with_stack=self.with_stack,
            with_flops=self.with_flops)
        self._steps = 0
        self.profiler.start()

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        if self.profiler is None:
            return
        self._last_iter = runner.iter + 1  # the iteration this step() closes
        with warnings.catch_warnings():
            # each cycle writes its own trace: that per-cycle events are cleared is the point
            warnings.filterwarnings("ignore", message=".*Profiler clears events")
            self.profiler.step()
        self._steps += 1
        cycle = self.wait + self.warmup + self.active
        if self.repeat and self._steps >= self.skip_first + cycle * self.repeat:
            self._stop()  # schedule done: no profiler overhead for the rest of the run

    def _recorded_before_stop(self) -> int:
        """The iterations in the window that ``stop()`` writes a trace for: 0 when the
        window opened after the last iteration (only the end-of-training hooks in it)."""
        recorded, step = 0, self._steps - 1
        while step >= 0 and self._schedule(step) is ProfilerAction.RECORD:
            recorded, step = recorded + 1, step - 1
        return recorded

    def after_train(self, runner: Runner) -> None:
        self._stop()

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        self._stop()

    def _stop(self) -> None:
        if self.profiler is not None:
            profiler, self.profiler = self.profiler, None
            self._stopping = True
            try:
                profiler.stop()
            finally:
                self._stopping = False
