"""ClosureHooks across a stop: a finished ``once`` hook's state stays in checkpoints under the
key it had (the keys of the others do not move), ``train()`` again after a failing
``after_train_iter`` hook does not run that iteration's step twice, and Ignite's
``A | B`` / ``once=[...]`` get errors that say what to write instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, HookError, Runner
from hookline.engine import ClosureHook
from hookline.engine.checkpoint.run import hook_state_keys
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

Log = list[tuple[str, int]]


def _data() -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(40, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


def make_runner(work_dir: Path, *, checkpoint_every: int | None = 1, **kwargs: Any) -> Runner:
    torch.manual_seed(0)
    checkpoint = None if checkpoint_every is None else {
        "type": "CheckpointHook", "interval": checkpoint_every, "by_epoch": False}
    options: dict[str, Any] = dict(
        optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
        train_dataloader=DataLoader(_data(), batch_size=8, shuffle=True), max_epochs=3,
        work_dir=str(work_dir), seed=0,
        default_hooks={"logger": None, "progress": None, "checkpoint": checkpoint})
    options.update(kwargs)
    return Runner(torch.nn.Linear(4, 2), **options)


def crash_at(runner: Runner, iteration: int, **kwargs: Any) -> dict[str, bool]:
    """A hook raising once, in ``after_train_iter`` of ``iteration`` (1-based)."""
    armed = {"armed": True}

    def crash(r: Runner) -> None:
        if armed["armed"] and r.iter + 1 == iteration:
            armed["armed"] = False
            raise RuntimeError("crash")

    runner.on("after_train_iter", crash, **kwargs)
    return armed


def same_weights(a: Runner, b: Runner) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.model.parameters(), b.model.parameters()))


# -- 1. once-hooks and the checkpoint keys of the others ---------------------------------------

def add_once_first(runner: Runner, log: Log) -> None:
    """Ignite's ITERATION_COMPLETED(once=2), (every=3), (every=5), as lambdas (one key each)."""
    runner.on("after_train_iter", lambda r: log.append(("once2", r.iter + 1)), every=2, once=True)
    runner.on("after_train_iter", lambda r: log.append(("every3", r.iter + 1)), every=3)
    runner.on("after_train_iter", lambda r: log.append(("every5", r.iter + 1)), every=5)


def add_once_last(runner: Runner, log: Log) -> None:
    runner.on("after_train_iter", lambda r: log.append(("every2", r.iter + 1)), every=2)
    runner.on("after_train_iter", lambda r: log.append(("every3", r.iter + 1)), every=3)
    runner.on("after_train_iter", lambda r: log.append(("once4", r.iter + 1)), every=4, once=True)


@pytest.mark.parametrize("add_hooks", [add_once_first, add_once_last])
def test_a_resumed_run_calls_closure_hooks_as_one_that_never_stopped(tmp_path: Path,
                                                                     add_hooks: Any) -> None:
    whole: Log = []
    runner = make_runner(tmp_path / "whole")
    add_hooks(runner, whole)
    runner.train()

    first: Log = []
    runner = make_runner(tmp_path / "crashed")
    add_hooks(runner, first)
    crash_at(runner, 7, priority="LOWEST")  # after the CheckpointHook: iter_7.pth is written
    with pytest.raises(HookError, match="crash"):
        runner.train()
    saved = torch.load(tmp_path / "crashed" / "iter_7.pth", weights_only=True)["hooks"]
    closures = {k: v for k, v in saved.items() if k.startswith("ClosureHook")}
    assert len(closures) == 3  # the finished once-hook's state too
    assert sorted(v["done"] for v in closures.values()) == [False, False, True]

    rest: Log = []
    resumed = make_runner(tmp_path / "crashed", resume="auto")
    add_hooks(resumed, rest)
    resumed.train()
    assert first + rest == whole
    once = [h for h in resumed.hooks.hooks if isinstance(h, ClosureHook) and h.once]
    assert once == []  # finished before the resume: off the table at its first call


def test_checkpoint_keys_do_not_move_when_a_once_hook_finishes(tmp_path: Path) -> None:
    runner = make_runner(tmp_path, checkpoint_every=None, max_epochs=1)
    log: Log = []
    add_once_first(runner, log)
    before = {key: id(hook) for key, hook in hook_state_keys(runner).items()}
    runner.train()
    assert ("once2", 2) in log
    assert {key: id(hook) for key, hook in hook_state_keys(runner).items()} == before


def test_a_checkpoint_keyed_without_finished_hooks_still_loads(tmp_path: Path) -> None:
    """A file written before finished once-hooks were kept: the others' keys load as before
    (nothing finished yet) and the hooks count on from the saved counts."""
    runner = make_runner(tmp_path, checkpoint_every=None, max_epochs=1)
    log: Log = []
    add_once_last(runner, log)
    runner.train()  # 5 iterations: the once-hook (every=4) finished at 4
    path = runner.save_checkpoint(tmp_path / "new.pth")
    checkpoint = torch.load(path, weights_only=True)
    keys = sorted(k for k in checkpoint["hooks"] if k.startswith("ClosureHook"))
    base = keys[0]
    assert keys == [base, f"{base}.2", f"{base}.3"]
    assert checkpoint["hooks"][f"{base}.3"] == {"calls": 4, "done": True}
    del checkpoint["hooks"][f"{base}.3"]  # as an older hookline wrote it
    torch.save(checkpoint, tmp_path / "old.pth")
    resumed = make_runner(tmp_path / "resumed", checkpoint_every=None, max_epochs=2,
                          resume=str(tmp_path / "old.pth"))
    rest: Log = []
    add_once_last(resumed, rest)
    resumed.train()
    # every2 / every3 count on from 5 calls; the once-hook, without a saved state, anew
    assert rest == [("every2", 6), ("every3", 6), ("every2", 8), ("every3", 9), ("once4", 9),
                    ("every2", 10)]


# -- 2. train() again after a failing after_train_iter hook ---------------------------------

@pytest.mark.parametrize("length", [{"max_epochs": 3}, {"max_epochs": None, "max_iters": 15}])
def test_train_again_after_a_failing_hook_does_not_step_twice(tmp_path: Path,
                                                              length: dict[str, Any]) -> None:
    def hooks(runner: Runner, log: list[int], steps: list[int]) -> None:
        runner.on("before_train_iter", lambda r: steps.append(r.iter + 1))
        runner.on("after_train_iter", lambda r: log.append(r.iter + 1), every=3)

    scheduler = {"type": "StepLR", "step_size": 4, "gamma": 0.5, "by_epoch": False}
    whole = make_runner(tmp_path / "whole", checkpoint_every=None, param_scheduler=scheduler,
                        **length)
    whole_log: list[int] = []
    whole_steps: list[int] = []
    hooks(whole, whole_log, whole_steps)
    whole.train()

    runner = make_runner(tmp_path / "again", checkpoint_every=None, param_scheduler=scheduler,
                         **length)
    log: list[int] = []
    steps: list[int] = []
    hooks(runner, log, steps)
    crash_at(runner, 6, priority="LOWEST")  # after the every=3 hook and the scheduler ran
    with pytest.raises(HookError, match="crash"):
        runner.train()
    assert runner.iter == 5  # iteration 6's after_train_iter hooks did not all run
    runner.train()
    assert steps == whole_steps == list(range(1, 16))  # iteration 6 ran once
    assert log == whole_log == [3, 6, 9, 12, 15]
    assert runner.iter == 15 and same_weights(runner, whole)


def test_train_again_in_an_iteration_based_run_validates_first(tmp_path: Path) -> None:
    """Stopped in after_train_iter of iteration 6, after which validation is due: train()
    again runs that validation, then iteration 7 (as a resume from a checkpoint there)."""
    def run(runner: Runner) -> list[tuple[str, int]]:
        events: list[tuple[str, int]] = []
        runner.on("before_train_iter", lambda r: events.append(("step", r.iter + 1)))
        runner.on("after_val_epoch", lambda r: events.append(("val", r.iter)))
        return events

    options: dict[str, Any] = dict(checkpoint_every=None, max_epochs=None, max_iters=12,
                                   val_interval=3, val_dataloader=DataLoader(_data(), batch_size=20),
                                   metrics={"acc": "accuracy"})
    whole = make_runner(tmp_path / "whole", **options)
    expected = run(whole)
    whole.train()
    runner = make_runner(tmp_path / "again", **options)
    events = run(runner)
    crash_at(runner, 6, priority="LOWEST")
    with pytest.raises(HookError, match="crash"):
        runner.train()
    runner.train()
    assert events == expected and ("val", 6) in events
    assert runner.iter == 12 and same_weights(runner, whole)


def test_train_again_matches_a_resume_from_a_checkpoint_written_there(tmp_path: Path) -> None:
    """The crash at NORMAL priority, before the CheckpointHook: a checkpoint written at that
    point would resume at the next iteration, with the LOW/VERY_LOW hooks skipped there."""
    runner = make_runner(tmp_path / "again", checkpoint_every=None)
    crash_at(runner, 6)  # NORMAL: before the CheckpointHook
    with pytest.raises(HookError, match="crash"):
        runner.train()
    there = runner.save_checkpoint(tmp_path / "there.pth")  # what that point resumes from
    runner.train()
    resumed = make_runner(tmp_path / "resumed", checkpoint_every=None, resume=str(there))
    resumed.train()
    assert runner.iter == resumed.iter == 15 and same_weights(runner, resumed)


def test_train_again_after_a_failure_before_the_step_runs_that_iteration(tmp_path: Path
                                                                         ) -> None:
    whole = make_runner(tmp_path / "whole", checkpoint_every=None)
    whole.train()
    runner = make_runner(tmp_path / "again", checkpoint_every=None)
    armed = {"armed": True}

    def crash(r: Runner) -> None:
        if armed["armed"] and r.iter + 1 == 6:
            armed["armed"] = False
            raise RuntimeError("crash")

    runner.on("before_train_iter", crash)
    with pytest.raises(HookError, match="crash"):
        runner.train()
    runner.train()
    assert runner.iter == 15 and same_weights(runner, whole)


@pytest.mark.parametrize("length", [{"max_epochs": 3}, {"max_epochs": None, "max_iters": 15}])
def test_train_again_runs_the_hooks_after_the_failing_one_for_that_iteration(
        tmp_path: Path, length: dict[str, Any]) -> None:
    """The crash at NORMAL priority, before the per-iteration scheduler (LOW) and a LOWEST
    hook: train() again gives them iteration 6 first (at iter 5, its batch and outputs), so
    the learning rates and weights match a run without the crash."""
    scheduler = {"type": "StepLR", "step_size": 2, "gamma": 0.5, "by_epoch": False}

    def hooks(runner: Runner) -> list[tuple[int, int, float]]:
        seen: list[tuple[int, int, float]] = []

        def last(r: Runner, batch_idx: int, outputs: dict[str, Any]) -> None:
            seen.append((r.iter, batch_idx, outputs["loss"].detach().item()))

        runner.on("after_train_iter", last, priority="LOWEST")
        return seen

    whole = make_runner(tmp_path / "whole", checkpoint_every=None, param_scheduler=scheduler,
                        **length)
    expected = hooks(whole)
    whole.train()
    runner = make_runner(tmp_path / "again", checkpoint_every=None, param_scheduler=scheduler,
                         **length)
    seen = hooks(runner)
    crash_at(runner, 6)
    with pytest.raises(HookError, match="crash"):
        runner.train()
    assert len(seen) == 5
    runner.train()
    assert seen == expected and len(seen) == 15
    assert runner.optim_wrapper.get_lr() == whole.optim_wrapper.get_lr()
    assert runner.iter == 15 and same_weights(runner, whole)


def test_a_hook_failing_again_in_those_leaves_the_ones_after_it(tmp_path: Path) -> None:
    runner = make_runner(tmp_path / "again", checkpoint_every=None)
    calls: list[tuple[str, int]] = []
    failing = {"middle": 1}

    def middle(r: Runner) -> None:
        calls.append(("middle", r.iter))
        if failing["middle"]:
            failing["middle"] -= 1
            raise RuntimeError("middle")

    crash_at(runner, 6, priority="HIGH")
    runner.on("after_train_iter", middle, priority="LOW", when=lambda r: r.iter == 5)
    runner.on("after_train_iter", lambda r: calls.append(("last", r.iter)), priority="LOWEST",
              when=lambda r: r.iter == 5)
    with pytest.raises(HookError, match="crash"):
        runner.train()
    with pytest.raises(HookError, match="middle"):
        runner.train()  # the rest of iteration 6 runs first; middle raises in it
    assert calls == [("middle", 5)] and runner.iter == 5
    runner.train()  # middle is not called again for iteration 6; the LOWEST hook is
    assert calls == [("middle", 5), ("last", 5)] and runner.iter == 15


def test_a_checkpoint_loaded_after_the_failure_drops_those_hooks(tmp_path: Path) -> None:
    source = make_runner(tmp_path / "source", checkpoint_every=None, max_epochs=1)
    source.train()
    saved = source.save_checkpoint(tmp_path / "epoch1.pth")
    runner = make_runner(tmp_path / "again", checkpoint_every=None)
    late: list[int] = []
    crash_at(runner, 8)
    runner.on("after_train_iter", lambda r: late.append(r.iter), priority="LOWEST")
    with pytest.raises(HookError, match="crash"):
        runner.train()
    runner.resume(saved)  # back to the end of epoch 1 (5 iterations)
    runner.train()
    assert late == [0, 1, 2, 3, 4, 5, 6] + list(range(5, 15))


@pytest.mark.parametrize("length", [{"max_epochs": 3}, {"max_epochs": None, "max_iters": 15,
                                                       "val_interval": 5}])
def test_train_again_after_a_failure_in_after_val_epoch_finishes_that_validation(
        tmp_path: Path, length: dict[str, Any]) -> None:
    """The hooks before the one that raised saw the validation, those after it get its
    metrics at train() again (not a second validation), then after_val; the run goes on as
    one that never stopped."""
    val = {"val_dataloader": DataLoader(_data(), batch_size=20), "metrics": {"acc": "accuracy"}}

    def hooks(runner: Runner) -> list[tuple[str, int]]:
        seen: list[tuple[str, int]] = []
        runner.on("after_val_epoch", lambda r: seen.append(("first", r.iter)), priority="HIGH")
        runner.on("after_val_epoch", lambda r: seen.append(("last", r.iter)), priority="LOWEST")
        runner.on("after_val", lambda r: seen.append(("after_val", r.iter)))
        return seen

    whole = make_runner(tmp_path / "whole", checkpoint_every=None, **length, **val)
    expected = hooks(whole)
    whole.train()
    runner = make_runner(tmp_path / "again", checkpoint_every=None, **length, **val)
    seen = hooks(runner)
    armed = {"armed": True}

    def crash(r: Runner) -> None:
        if armed["armed"] and r.iter == 10:
            armed["armed"] = False
            raise RuntimeError("crash")

    runner.on("after_val_epoch", crash)
    with pytest.raises(HookError, match="crash"):
        runner.train()
    assert seen[-1] == ("first", 10)
    runner.train()
    assert seen == expected
    assert runner.iter == 15 and same_weights(runner, whole)


# -- 3. errors for Ignite's event lists and once=[...] ----------------------------------------

class _EventsList:
    """What Ignite's ``Events.EPOCH_COMPLETED | Events.COMPLETED`` is: an iterable of events."""

    class _Event:
        def __init__(self, name: str) -> None:
            self.name = name

        def __str__(self) -> str:
            return f"Events.{self.name}"

    def __init__(self, *names: str) -> None:
        self._events = [self._Event(name) for name in names]

    def __iter__(self) -> Any:
        return iter(self._events)


def test_an_ignite_events_list_is_told_to_register_once_per_stage(tmp_path: Path) -> None:
    runner = make_runner(tmp_path, checkpoint_every=None)
    with pytest.raises(ConfigError, match=r"got Events.EPOCH_COMPLETED \| Events.COMPLETED: "
                                          r"register it once per stage: runner.on\("
                                          r"'after_train_epoch', fn\) and runner.on\("
                                          r"'after_train', fn\)"):
        runner.on(_EventsList("EPOCH_COMPLETED", "COMPLETED"), print)  # type: ignore[arg-type]


@pytest.mark.parametrize(("stage", "hint"), [
    ("after_train_iter", r"iterations 5 and 7, .* when=lambda runner: runner.iter \+ 1 in \(5, 7\)"),
    ("after_train_epoch", r"epochs 5 and 7, .* when=lambda runner: runner.epoch \+ 1 in \(5, 7\)"),
    ("after_val_epoch", r"calls 5 and 7 of after_val_epoch, .* a when= predicate"),
])
def test_ignite_once_list_gets_a_when_hint(tmp_path: Path, stage: str, hint: str) -> None:
    runner = make_runner(tmp_path, checkpoint_every=None)
    with pytest.raises(ConfigError, match=r"once must be True or False, got \[5, 7\] \(to run "
                                          f"at {hint}"):
        runner.on(stage, print, once=[5, 7])  # type: ignore[arg-type]
