"""ProfilerHook on real runs: torch.profiler traces that parse as Chrome trace JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity

from hookline import HOOKS, ConfigError, HookError
from hookline.hooks import ProfilerHook

from ..engine.toy import make_runner


def run(work_dir: Path, hook: ProfilerHook, **kwargs):
    runner = make_runner(work_dir, hooks=[hook],
                         default_hooks={"checkpoint": None, "logger": None}, **kwargs)
    runner.train()
    return runner


def trace_events(path: Path) -> list[dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data["traceEvents"], list) and data["traceEvents"]
    return data["traceEvents"]


def steps(events: list[dict]) -> list[int]:
    return sorted(int(e["name"].split("#")[1]) for e in events
                  if e.get("name", "").startswith("ProfilerStep#"))


def test_trace_of_the_scheduled_iterations(tmp_path: Path) -> None:
    hook = ProfilerHook(wait=1, warmup=1, active=2, record_shapes=True)
    assert hook.profiled_iters() == [3, 4]
    runner = run(tmp_path, hook, max_iters=8)
    traces = sorted((tmp_path / "profiler").glob("*.pt.trace.json"))
    assert len(traces) == 1 and hook.traces == traces
    assert traces[0].name.startswith("rank0.")
    events = trace_events(traces[0])
    assert steps(events) == [2, 3]  # 0-based steps: iterations 3 and 4
    names = {e.get("name") for e in events}
    assert "aten::linear" in names and any(n and "Optimizer.step" in n for n in names)
    assert any("Input Dims" in e.get("args", {}) for e in events)  # record_shapes
    assert hook.profiler is None  # stopped once the schedule was done
    log = (tmp_path / "log.txt").read_text(encoding="utf-8")
    assert f"trace of iterations up to 4 written to {traces[0]}" in log
    assert "top operators by self_cpu_time_total" in log
    assert runner.iter == 8


def test_repeat_writes_one_trace_per_cycle_to_out_dir(tmp_path: Path) -> None:
    hook = HOOKS.build({"type": "ProfilerHook", "wait": 0, "warmup": 1, "active": 1,
                        "repeat": 2, "skip_first": 1, "activities": ["cpu"], "row_limit": 0,
                        "out_dir": str(tmp_path / "traces")})
    assert hook.profiled_iters() == [3, 5]
    run(tmp_path / "work", hook, max_iters=8)
    traces = hook.traces
    assert len(traces) == 2 and all(p.parent == tmp_path / "traces" for p in traces)
    assert [steps(trace_events(p)) for p in traces] == [[2], [4]]
    assert "top operators" not in (tmp_path / "work" / "log.txt").read_text(encoding="utf-8")


def test_training_ending_inside_the_active_window_still_writes(tmp_path: Path) -> None:
    hook = ProfilerHook(wait=0, warmup=1, active=5, activities="cpu", row_limit=0)
    run(tmp_path, hook, max_iters=3)
    assert len(hook.traces) == 1
    # iterations 2 and 3, then the step opened after the last one (the end-of-training hooks)
    assert steps(trace_events(hook.traces[0])) == [1, 2, 3]
    log = (tmp_path / "log.txt").read_text(encoding="utf-8")
    assert "trace of iterations up to 3 written" in log  # the last iteration, not one past it


def test_training_ending_as_a_window_opens_writes_no_trace(tmp_path: Path) -> None:
    """Iteration 4 would be the first recorded one; a 3-iteration run must not write a trace
    holding only the end-of-training hooks."""
    hook = ProfilerHook(wait=2, warmup=1, active=2, activities="cpu", row_limit=0)
    assert hook.profiled_iters() == [4, 5]
    run(tmp_path, hook, max_iters=3)
    assert hook.traces == [] and not list((tmp_path / "profiler").glob("*.json"))
    log = (tmp_path / "log.txt").read_text(encoding="utf-8")
    assert "training ended before iteration 4, the first of a profiled window" in log


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_activity_on_a_gpu_run(tmp_path: Path) -> None:
    hook = ProfilerHook(wait=0, warmup=1, active=1, row_limit=3)
    run(tmp_path, hook, max_iters=3, device="cuda")
    events = trace_events(hook.traces[0])
    assert any(e.get("cat") == "kernel" for e in events)


@pytest.mark.parametrize("kwargs, message", [
    ({"active": 0}, "ProfilerHook active must be an int >= 1, got 0"),
    ({"wait": -1}, "ProfilerHook wait must be an int >= 0, got -1"),
    ({"activities": ["cpu", "tpu"]}, "activities must be a list of 'cpu' / 'cuda'"),
    ({"activities": []}, "activities is empty"),
    ({"out_dir": 5}, "out_dir must be a path or None"),
])
def test_bad_arguments(kwargs, message) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ProfilerHook(**kwargs)


def test_activities_accept_names_and_enums() -> None:
    hook = ProfilerHook(activities=["CPU", ProfilerActivity.CUDA])
    assert hook.activities == [ProfilerActivity.CPU, ProfilerActivity.CUDA]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")
def test_cuda_activities_on_a_machine_without_cuda_are_one_error_before_training(tmp_path):
    """Before: a HookError from inside torch's profiler after the first iteration, then two
    more tracebacks from on_exception. The hook still builds (a GPU config, checked on a
    laptop), and the run refuses to start."""
    runner = make_runner(tmp_path, max_epochs=1, hooks=[ProfilerHook(activities=["cuda"])])
    with pytest.raises(HookError, match=r"ProfilerHook activities: cuda cannot be profiled on "
                                        r"this machine \(it can: cpu\)"):
        runner.train()
    assert runner.iter == 0
