"""Scheduler lengths that follow the run (``T_max`` left out, ``total_iters: run``) on real
runs, and the warning / error when the run outlasts a fixed-length scheduler."""

from __future__ import annotations

import math
import random

import pytest
import torch
from torch.optim import lr_scheduler as ts
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Hook, HookError, Runner
from hookline.app import build_runner
from hookline.demo.registry import demo_config_path
from hookline.engine.schedule_length import SchedulerSteps, _updates, fill_run_lengths

QUIET = {"logger": None, "progress": None, "checkpoint": None}


class Record(Hook):
    priority = "LOWEST"

    def __init__(self) -> None:
        self.lrs: list[float] = []

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self.lrs.append(runner.optimizer.param_groups[0]["lr"])


def data() -> TensorDataset:
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(32, 4, generator=generator)
    return TensorDataset(x, (x[:, 1] > 0).long())


def make_runner(work_dir, param_scheduler, *, hooks=(), default_hooks=None, optim_wrapper=None,
                resume=None, **length) -> Runner:
    torch.manual_seed(0)
    optimizer = None if optim_wrapper is not None else {"type": "SGD", "lr": 0.1}
    return Runner(torch.nn.Linear(4, 2), optimizer=optimizer, optim_wrapper=optim_wrapper,
                  loss_fn=torch.nn.CrossEntropyLoss(), param_scheduler=param_scheduler,
                  train_dataloader=DataLoader(data(), batch_size=4, shuffle=True),  # 8 batches
                  work_dir=work_dir, device="cpu", hooks=hooks, resume=resume,
                  default_hooks=QUIET if default_hooks is None else default_hooks, **length)


def hand(scheduler_fn, steps: int) -> list[float]:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    scheduler = scheduler_fn(optimizer)
    lrs = []
    for _ in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs


def warnings_in(runner: Runner) -> list[str]:
    text = (runner.work_dir / "log.txt").read_text()
    return [line for line in text.splitlines() if " - WARNING - " in line]


# -- the length follows the run ---------------------------------------------------------------------
@pytest.mark.parametrize("epochs", [2, 3])
def test_cosine_without_t_max_anneals_over_the_whole_run(tmp_path, epochs):
    record = Record()
    runner = make_runner(tmp_path, {"type": "CosineAnnealingLR", "eta_min": 0.01, "by_epoch": False},
                         hooks=[record], max_epochs=epochs)
    assert runner.param_schedulers[0].T_max == 8 * epochs
    runner.train()
    assert record.lrs == pytest.approx(hand(lambda o: ts.CosineAnnealingLR(o, T_max=8 * epochs,
                                                                           eta_min=0.01), 8 * epochs))
    assert all(a >= b for a, b in zip(record.lrs, record.lrs[1:]))  # never cycles back up
    assert runner.optimizer.param_groups[0]["lr"] == pytest.approx(0.01)
    assert warnings_in(runner) == []


def test_by_epoch_lengths_count_epochs_also_in_an_iteration_based_run(tmp_path):
    epochs = make_runner(tmp_path / "e", {"type": "CosineAnnealingLR"}, max_epochs=5)
    iters = make_runner(tmp_path / "i", {"type": "CosineAnnealingLR", "T_max": "run"}, max_iters=20)
    per_iter = make_runner(tmp_path / "p", {"type": "CosineAnnealingLR", "by_epoch": False},
                           max_iters=20)
    assert epochs.param_schedulers[0].T_max == 5
    assert iters.param_schedulers[0].T_max == 2  # 20 iterations of 8: two whole epochs
    assert per_iter.param_schedulers[0].T_max == 20


def test_run_counts_optimizer_steps_under_gradient_accumulation(tmp_path):
    wrapper = {"optimizer": {"type": "SGD", "lr": 0.1}, "accumulative_counts": 3}
    record = Record()
    runner = make_runner(tmp_path, {"type": "CosineAnnealingLR", "by_epoch": False},
                         optim_wrapper=wrapper, hooks=[record], max_epochs=2)
    assert runner.param_schedulers[0].T_max == 6  # groups of 3, 3, 2 per epoch
    runner.train()
    assert runner.param_schedulers[0].last_epoch == 6
    assert runner.optimizer.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


def test_run_value_on_linear_and_onecycle_and_sequential_children(tmp_path):
    runner = make_runner(tmp_path, [
        {"type": "LinearLR", "start_factor": 0.5, "total_iters": "run", "by_epoch": False},
        {"type": "OneCycleLR", "max_lr": 0.5, "by_epoch": False},
        {"type": "SequentialLR", "milestones": [4], "by_epoch": False, "schedulers": [
            {"type": "LinearLR", "start_factor": 0.1, "total_iters": "run"},
            {"type": "CosineAnnealingLR"}]},
        {"type": "LinearLR", "start_factor": 0.5}], max_epochs=3)
    linear, onecycle, sequential, default = runner.param_schedulers
    assert linear.total_iters == 24 and onecycle.total_steps == 24
    assert default.total_iters == 5  # left out: torch's default, not the run
    # the sequence's children: 4 warm-up steps, then the cosine over the remaining 20
    children = sequential.state_dict()["_schedulers"]
    assert (children[0]["total_iters"], children[1]["T_max"]) == (4, 20)
    runner.train()  # OneCycleLR steps exactly total_steps times: no error
    assert onecycle.last_epoch == 24 and sequential.last_epoch == 24


def test_omitted_length_without_a_training_run_is_a_placeholder(tmp_path):
    runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                    param_scheduler={"type": "CosineAnnealingLR"}, work_dir=tmp_path,
                    default_hooks=QUIET)
    assert runner.train_loop is None and runner.param_schedulers[0].T_max >= 1


@pytest.mark.parametrize(("spec", "words"), [
    ({"type": "StepLR", "step_size": "run"}, ("param_scheduler.step_size", "'run'")),
    ({"type": "ConstantLR", "total_iters": "run"},
     ("param_scheduler.total_iters", "CosineAnnealingLR T_max", "not by ConstantLR")),
    ([{"type": "CosineAnnealingLR", "total_steps": "run"}],
     ("param_scheduler[0].total_steps", "not by CosineAnnealingLR")),
])
def test_run_where_no_length_follows_the_run_is_one_error_before_anything_is_written(
        tmp_path, spec, words):
    with pytest.raises(ConfigError) as caught:
        make_runner(tmp_path / "w", spec, max_epochs=2)
    assert all(w in str(caught.value) for w in words), str(caught.value)
    assert not (tmp_path / "w").exists()


def test_a_by_epoch_length_in_a_run_shorter_than_one_epoch_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"T_max follows the run.*0 per-epoch steps.*by_epoch: false"):
        make_runner(tmp_path, {"type": "CosineAnnealingLR"}, max_iters=5)


# -- fixed lengths the run outlasts -------------------------------------------------------------------
def test_a_fixed_t_max_shorter_than_the_run_is_one_warning_before_training(tmp_path):
    record = Record()
    seen_first: list[list[str]] = []
    runner = make_runner(tmp_path, {"type": "CosineAnnealingLR", "T_max": 8, "by_epoch": False},
                         hooks=[record], max_epochs=2)
    runner.on("before_train_iter", lambda r, **_: seen_first.append(warnings_in(r)), once=True)
    runner.train()
    (line,) = warnings_in(runner)
    assert seen_first == [[line]]  # logged before the first iteration
    assert "CosineAnnealingLR: T_max is 8 but the run steps it 16 times (per iteration)" in line
    assert "cycle back up after step 8" in line
    assert max(record.lrs[8:]) > min(record.lrs)  # what it warned about: the LR rose again


@pytest.mark.parametrize("spec", [{"type": "StepLR", "step_size": 1},
                                  {"type": "MultiStepLR", "milestones": [1]},
                                  {"type": "LinearLR", "total_iters": 2},
                                  {"type": "PolynomialLR", "total_iters": 2},
                                  {"type": "CosineAnnealingLR", "T_max": 4}])
def test_schedulers_that_end_in_a_fixed_value_or_fit_do_not_warn(tmp_path, spec):
    runner = make_runner(tmp_path, spec, max_epochs=4)
    runner.train()
    assert warnings_in(runner) == []


def test_a_scheduler_object_is_checked_too(tmp_path):
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    runner = Runner(model, optimizer=optimizer, loss_fn=torch.nn.CrossEntropyLoss(),
                    param_scheduler=ts.CosineAnnealingLR(optimizer, T_max=2),
                    train_dataloader=DataLoader(data(), batch_size=4), max_epochs=3,
                    work_dir=tmp_path, default_hooks=QUIET)
    runner.train()
    (line,) = warnings_in(runner)
    assert "T_max is 2 but the run steps it 3 times (per epoch)" in line


def test_onecycle_shorter_than_the_run_is_an_error_before_training(tmp_path):
    record = Record()
    with pytest.raises(ConfigError, match=r"OneCycleLR: total_steps is 10 but the run steps it 16 "
                                          r"times \(per iteration\), and torch raises"):
        make_runner(tmp_path, {"type": "OneCycleLR", "max_lr": 0.5, "total_steps": 10,
                               "by_epoch": False}, hooks=[record], max_epochs=2)
    assert record.lrs == []


def test_resuming_a_longer_run_keeps_the_checkpoint_schedule_and_says_so(tmp_path):
    checkpoint = {"interval": 1, "max_keep_ckpts": 1}
    hooks = {**QUIET, "checkpoint": checkpoint}
    first = make_runner(tmp_path, {"type": "CosineAnnealingLR", "by_epoch": False},
                        default_hooks=hooks, max_epochs=2)
    first.train()
    assert warnings_in(first) == []
    longer = make_runner(tmp_path, {"type": "CosineAnnealingLR", "by_epoch": False},
                         default_hooks=hooks, max_epochs=4, resume="auto")
    assert longer.param_schedulers[0].T_max == 32  # built for the longer run ...
    longer.train()
    assert longer.param_schedulers[0].T_max == 16  # ... the checkpoint's schedule resumed
    assert any("T_max is 16 but the run steps it 32 times" in w for w in warnings_in(longer))


def test_onecycle_resumed_into_a_longer_run_is_an_error_before_it_trains(tmp_path):
    checkpoint = {"interval": 1, "max_keep_ckpts": 1}
    spec = {"type": "OneCycleLR", "max_lr": 0.5, "by_epoch": False}
    make_runner(tmp_path, spec, default_hooks={**QUIET, "checkpoint": checkpoint},
                max_epochs=1).train()
    record = Record()
    longer = make_runner(tmp_path, spec, default_hooks={**QUIET, "checkpoint": checkpoint},
                         hooks=[record], max_epochs=2, resume="auto")
    with pytest.raises(HookError, match="total_steps is 8 but the run steps it 16 times") as caught:
        longer.train()
    assert isinstance(caught.value.original, ConfigError)
    assert record.lrs == []


# -- configs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("epochs", "t_max"), [(2, 90), (60, 2700)])
def test_the_demo_schedule_follows_max_epochs(tmp_path, epochs, t_max):
    runner = build_runner(demo_config_path(), work_dir=tmp_path,
                          overrides=[f"max_epochs={epochs}", "num_threads=null"])
    scheduler, = runner.param_schedulers
    by_epoch = scheduler.by_epoch
    assert type(scheduler).__name__ == "CosineAnnealingLR" and not by_epoch
    assert scheduler.T_max == t_max  # 45 batches per epoch
    saved = (tmp_path / "config.yaml").read_text()
    assert "T_max" not in saved  # the saved config follows the run too


def test_config_checks_name_a_misplaced_run(tmp_path):
    cfg = {"model": {"type": "DigitsCNN"}, "optimizer": {"type": "Adam", "lr": 0.003},
           "param_scheduler": [{"type": "ExponentialLR", "gamma": 0.9},
                               {"type": "MultiStepLR", "milestones": [2], "T_max": "run"}]}
    with pytest.raises(ConfigError, match=r"param_scheduler\[1\]\.T_max: 'run'.* not by MultiStepLR"):
        build_runner(cfg, work_dir=tmp_path / "w")
    assert not (tmp_path / "w").exists()


# -- counting -------------------------------------------------------------------------------------------
def test_updates_count_every_optimizer_step_of_several_accumulating_optimizers():
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 60)
        counts = sorted(set(rng.choices(range(1, 8), k=rng.randint(1, 3))))
        brute = sum(1 for i in range(1, n + 1) if i == n or any(i % c == 0 for c in counts))
        assert _updates(n, counts) == brute, (n, counts)
    assert _updates(10, [3]) == math.ceil(10 / 3)


def test_fill_leaves_objects_and_other_keys_alone():
    steps = SchedulerSteps(per_epoch=3, per_iter=30)
    obj = object()
    assert fill_run_lengths([obj, {"type": "StepLR", "step_size": 2}], steps) == \
        [obj, {"type": "StepLR", "step_size": 2}]
    assert fill_run_lengths({"type": "OneCycleLR", "max_lr": 1, "epochs": 2, "steps_per_epoch": 5},
                            steps) == {"type": "OneCycleLR", "max_lr": 1, "epochs": 2,
                                       "steps_per_epoch": 5}
