"""The loop objects (``runner.train_loop`` / ``val_loop`` / ``test_loop``): MMEngine's
attributes and meanings, batch indices, when validation runs, where errors surface, and
loops chosen by name from the registry."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Hook, HookError, Runner
from hookline.core import Registry
from hookline.engine import (
    LOOPS,
    EpochBasedTrainLoop,
    IterBasedTrainLoop,
    ValLoop,
)
from hookline.engine import TestLoop as EngineTestLoop  # (not a pytest class)
from hookline.hooks import OptimizerHook
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

from .toy import make_runner as make_toy_runner

QUIET = {"logger": None, "progress": None, "checkpoint": None}


def data(n: int = 24, seed: int = 0) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


def loader(n: int = 24, batch_size: int = 8, shuffle: bool = True) -> DataLoader:
    return DataLoader(data(n), batch_size=batch_size, shuffle=shuffle)


def make_runner(work_dir, *, model: torch.nn.Module | None = None, n: int = 24,
                hooks=(), default_hooks=None, **kwargs) -> Runner:
    """A Linear(4, 2) classifier on ``n`` samples in batches of 8 (3 batches for 24)."""
    torch.manual_seed(0)
    kwargs.setdefault("optimizer", {"type": "SGD", "lr": 0.1})
    return Runner(torch.nn.Linear(4, 2) if model is None else model,
                  loss_fn=torch.nn.CrossEntropyLoss(), train_dataloader=loader(n),
                  work_dir=work_dir, hooks=hooks, device="cpu",
                  default_hooks={**QUIET, **(default_hooks or {})}, **kwargs)


class Stages(Hook):
    """Records (stage, batch_idx, runner.epoch, runner.iter) of the training stages."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def before_train_epoch(self, runner) -> None:
        self.calls.append(("before_train_epoch", None, runner.epoch, runner.iter))

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self.calls.append(("before_train_iter", batch_idx, runner.epoch, runner.iter))

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        self.calls.append(("after_train_iter", batch_idx, runner.epoch, runner.iter))

    def after_train_epoch(self, runner) -> None:
        self.calls.append(("after_train_epoch", None, runner.epoch, runner.iter))

    def after_train(self, runner) -> None:
        self.calls.append(("after_train", None, runner.epoch, runner.iter))

    def of(self, stage: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == stage]


# -- the train loop objects -------------------------------------------------------------------

def test_an_epoch_run_has_an_epoch_based_train_loop_with_mmengine_attributes(tmp_path):
    runner = make_runner(tmp_path, max_epochs=2)
    loop = runner.train_loop
    assert type(loop) is EpochBasedTrainLoop
    assert loop.dataloader is runner.train_dataloader and len(loop.dataloader) == 3
    assert (loop.max_epochs, loop.max_iters) == (2, 6)
    assert (runner.max_epochs, runner.max_iters) == (2, 2 * len(runner.train_dataloader))
    assert (loop.val_interval, loop.val_begin) == (1, 1)
    assert (loop.epoch, loop.iter) == (0, 0)
    runner.train()
    assert (loop.epoch, loop.iter) == (runner.epoch, runner.iter) == (2, 6)


@pytest.mark.parametrize("max_iters", [6, 7, 9])
def test_an_iteration_run_has_an_iter_based_train_loop_and_counts_passes(tmp_path, max_iters):
    runner = make_runner(tmp_path, max_iters=max_iters)
    loop = runner.train_loop
    assert type(loop) is IterBasedTrainLoop
    assert loop.dataloader is runner.train_dataloader
    assert loop.max_iters == runner.max_iters == max_iters
    # passes over the data (the last one may be partial): ceil(max_iters / len(loader))
    assert loop.max_epochs == runner.max_epochs == math.ceil(max_iters / 3)
    runner.train()
    assert loop.iter == runner.iter == max_iters


def test_train_loop_stop_training_is_the_runner_flag_in_both_directions(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1)
    loop = runner.train_loop
    assert loop.stop_training is False and runner.stop_training is False
    loop.stop_training = True
    assert runner.stop_training is True and runner.state.stop_training is True
    runner.stop_training = False
    assert loop.stop_training is False
    runner.stop_training = True
    assert loop.stop_training is True


def test_iteration_runs_pass_the_global_iteration_as_batch_idx(tmp_path):
    stages = Stages()
    runner = make_runner(tmp_path, max_iters=8, hooks=[stages])  # 3 batches per pass
    runner.train()
    assert [c[1] for c in stages.of("before_train_iter")] == list(range(8))
    assert [c[1] for c in stages.of("after_train_iter")] == list(range(8))
    # the epoch stages fire once, around the whole run (MMEngine's IterBasedTrainLoop)
    assert len(stages.of("before_train_epoch")) == len(stages.of("after_train_epoch")) == 1


def test_epoch_runs_restart_batch_idx_every_epoch(tmp_path):
    stages = Stages()
    runner = make_runner(tmp_path, max_epochs=3, hooks=[stages])
    runner.train()
    assert [c[1] for c in stages.of("before_train_iter")] == [0, 1, 2] * 3
    assert [c[1] for c in stages.of("after_train_iter")] == [0, 1, 2] * 3
    # counters advance after the after_* hooks: hooks see the index of what just ran
    assert [c[3] for c in stages.of("after_train_iter")] == list(range(9))
    assert [c[2] for c in stages.of("after_train_epoch")] == [0, 1, 2]


def test_is_last_train_iter_is_true_exactly_on_the_last_iteration_of_an_epoch_run(tmp_path):
    seen: list[tuple[bool, bool]] = []

    class Last(Hook):
        def before_train_iter(self, runner, batch_idx, data_batch=None):
            self.before = self.is_last_train_iter(runner)

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            seen.append((self.before, self.is_last_train_iter(runner)))

    runner = make_runner(tmp_path, max_epochs=2, hooks=[Last()])
    runner.train()
    assert seen == [(False, False)] * 5 + [(True, True)]


def test_a_very_high_after_train_iter_hook_sees_this_iterations_update(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1)
    before: list[torch.Tensor] = []
    changed: list[bool] = []
    runner.on("before_train_iter",
              lambda r, **kw: before.append(r.model.weight.detach().clone()))
    runner.on("after_train_iter",
              lambda r, **kw: changed.append(not torch.equal(before[-1], r.model.weight)),
              priority="VERY_HIGH")
    runner.train()
    assert changed == [True, True, True]


# -- errors in the model's own code --------------------------------------------------------------

class FailsAt(torch.nn.Module):
    """Linear(4, 2) whose forward raises ``error`` on its ``at``-th call (0-based)."""

    def __init__(self, at: int, error: Exception) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)
        self.at, self.error, self.calls = at, error, 0

    def forward(self, x):
        if self.calls == self.at:
            raise self.error
        self.calls += 1
        return self.linear(x)


def test_an_error_in_forward_propagates_as_itself_with_a_note_naming_the_iteration(tmp_path):
    error = ValueError("bad input")
    seen: list[BaseException] = []
    runner = make_runner(tmp_path, model=FailsAt(3, error), max_epochs=3)
    runner.on("on_exception", lambda r, exception: seen.append(exception))
    with pytest.raises(ValueError, match="bad input") as info:
        runner.train()
    assert info.value is error and not isinstance(info.value, HookError)
    notes = getattr(info.value, "__notes__", [])
    assert any("iteration 3" in note for note in notes), notes
    assert seen == [error] and runner.iter == 3


class BackwardBoom(Exception):
    pass


class ExplodingBackward(torch.autograd.Function):
    @staticmethod
    def forward(_ctx, x):
        return x.clone()

    @staticmethod
    def backward(_ctx, _grad):
        raise BackwardBoom("backward exploded")


class FailsInBackward(torch.nn.Module):
    """Its ``at``-th forward (0-based) puts a function whose backward raises in the graph."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)
        self.at, self.calls = at, 0

    def forward(self, x):
        out = self.linear(x)
        if self.calls == self.at:
            out = ExplodingBackward.apply(out)
        self.calls += 1
        return out


def test_an_error_in_backward_propagates_as_itself_with_a_note_naming_the_iteration(tmp_path):
    runner = make_runner(tmp_path, model=FailsInBackward(4), max_iters=6)
    with pytest.raises(BackwardBoom, match="backward exploded") as info:
        runner.train()
    assert not isinstance(info.value, HookError)
    notes = getattr(info.value, "__notes__", [])
    assert any("iteration 4" in note for note in notes), notes
    assert runner.iter == 4


# -- accumulation with a per-iteration scheduler ---------------------------------------------------

@pytest.mark.parametrize("how", ["OptimizerHook", "optim_wrapper"])
def test_accumulation_with_a_per_iteration_scheduler_halves_lr_per_optimizer_step(tmp_path, how):
    kwargs: dict = {"optimizer": None, "hooks": []}
    if how == "OptimizerHook":
        kwargs.update(optimizer={"type": "SGD", "lr": 0.8}, hooks=[OptimizerHook(accumulate=2)])
    else:
        kwargs["optim_wrapper"] = {"optimizer": {"type": "SGD", "lr": 0.8},
                                   "accumulative_counts": 2}
    runner = make_runner(tmp_path, n=32, max_epochs=2,  # 4 batches: groups [0, 1], [2, 3]
                         param_scheduler={"type": "StepLR", "step_size": 1, "gamma": 0.5,
                                          "by_epoch": False}, **kwargs)
    lrs: list[float] = []
    runner.on("before_train_iter", lambda r, **kw: lrs.append(r.optimizer.param_groups[0]["lr"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. torch's "lr_scheduler.step() before optimizer.step()"
        runner.train()
    assert runner.optim_wrapper.accumulative_counts == 2
    assert lrs == [0.8, 0.8, 0.4, 0.4, 0.2, 0.2, 0.1, 0.1]
    assert runner.optimizer.param_groups[0]["lr"] == 0.05


# -- changing the loop's dataloader ----------------------------------------------------------------

def test_a_dataloader_assigned_after_an_epoch_is_the_one_the_next_epoch_iterates(tmp_path):
    bigger = loader(40, shuffle=False)  # 5 batches
    per_epoch: dict[int, list[int]] = {}

    class Swap(Hook):
        def before_train_iter(self, runner, batch_idx, data_batch=None):
            per_epoch.setdefault(runner.epoch, []).append(len(data_batch[0]))

        def after_train_epoch(self, runner):
            if runner.epoch == 0:
                runner.train_loop.dataloader = bigger

    runner = make_runner(tmp_path, max_epochs=3, hooks=[Swap()])
    runner.train()
    assert {epoch: len(sizes) for epoch, sizes in per_epoch.items()} == {0: 3, 1: 5, 2: 5}
    assert runner.train_dataloader is bigger and runner.iter == 3 + 5 + 5


def test_a_dataloader_assigned_in_before_train_epoch_is_the_one_that_epoch_iterates(tmp_path):
    """MMEngine's YOLOX-style switch: the loader set in ``before_train_epoch`` runs at once."""
    bigger = loader(40, shuffle=False)  # 5 batches
    per_epoch: dict[int, int] = {}

    class Switch(Hook):
        def before_train_epoch(self, runner):
            if runner.epoch == 1:
                runner.train_loop.dataloader = bigger

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            per_epoch[runner.epoch] = per_epoch.get(runner.epoch, 0) + 1

    runner = make_runner(tmp_path, max_epochs=3, hooks=[Switch()])
    runner.train()
    assert per_epoch == {0: 3, 1: 5, 2: 5}
    assert runner.max_iters == 3 * 3  # fixed when the loop was built, as in MMEngine


# -- loops chosen by name -------------------------------------------------------------------------

class CountingLoop(EpochBasedTrainLoop):
    """An EpochBasedTrainLoop that counts the epochs it ran."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.epochs_run = 0

    def run_epoch(self) -> bool:
        self.epochs_run += 1
        return super().run_epoch()


@pytest.fixture
def loops(monkeypatch):
    """LOOPS as the Runner sees it, plus ``CountingLoop`` registered by name.

    A copy, so the process-wide registry keeps exactly the built-in loops (its docstring
    example lists them)."""
    registry = Registry("loop")
    for name, cls in LOOPS.items():
        registry.register(cls, name=name)
    registry.register(CountingLoop, name="TestLoopsCountingLoop")
    monkeypatch.setattr("hookline.engine.runner.LOOPS", registry)
    return registry


@pytest.mark.parametrize("spec", ["TestLoopsCountingLoop", {"type": "TestLoopsCountingLoop"},
                                  {"type": "TestLoopsCountingLoop", "val_begin": 2}])
def test_a_registered_loop_class_named_in_train_loop_is_used(tmp_path, loops, spec):
    runner = make_runner(tmp_path, max_epochs=2, train_loop=spec)
    assert type(runner.train_loop) is CountingLoop
    assert runner.train_loop.max_epochs == 2
    assert runner.train_loop.val_begin == (2 if isinstance(spec, dict) and "val_begin" in spec
                                           else 1)
    runner.train()
    assert runner.train_loop.epochs_run == 2 and runner.iter == 6


def test_registering_a_second_loop_under_a_taken_name_raises(loops):
    with pytest.raises(ConfigError, match="already registered"):
        loops.register(CountingLoop, name="TestLoopsCountingLoop")
    with pytest.raises(ConfigError, match="already registered"):
        LOOPS.register(CountingLoop, name="EpochBasedTrainLoop")
    assert LOOPS.get("EpochBasedTrainLoop") is EpochBasedTrainLoop


def test_an_unknown_loop_name_is_a_config_error_suggesting_the_closest(tmp_path):
    with pytest.raises(ConfigError, match="did you mean 'EpochBasedTrainLoop'"):
        make_runner(tmp_path, max_epochs=1, train_loop="EpochBasedTrainLop")


# -- when validation runs --------------------------------------------------------------------------

def test_validation_runs_from_val_begin_every_val_interval_and_after_the_last_epoch(tmp_path):
    runner = make_runner(tmp_path, max_epochs=5, val_interval=2,
                         train_loop={"type": "EpochBasedTrainLoop", "val_begin": 2},
                         val_dataloader=loader(16, shuffle=False))
    assert (runner.train_loop.val_begin, runner.train_loop.val_interval) == (2, 2)
    after_epochs: list[int] = []
    runner.on("after_val_epoch", lambda r, metrics: after_epochs.append(r.epoch))
    runner.train()
    assert after_epochs == [2, 4, 5]


def test_iteration_runs_validate_every_val_interval_iterations_and_at_the_end(tmp_path):
    runner = make_runner(tmp_path, max_iters=7, val_interval=3,
                         val_dataloader=loader(16, shuffle=False))
    after_iters: list[int] = []
    runner.on("after_val_epoch", lambda r, metrics: after_iters.append(r.iter))
    runner.train()
    assert after_iters == [3, 6, 7]


def test_val_and_test_loops_hold_their_dataloader_and_metrics_and_the_last_result(tmp_path):
    val_loader, test_loader = loader(16, shuffle=False), loader(24, shuffle=False)
    runner = make_runner(tmp_path, max_epochs=1, val_dataloader=val_loader,
                         test_dataloader=test_loader, metrics={"accuracy": "accuracy"})
    assert type(runner.val_loop) is ValLoop and type(runner.test_loop) is EngineTestLoop
    assert runner.val_loop.dataloader is runner.val_dataloader
    assert runner.test_loop.dataloader is runner.test_dataloader
    assert set(runner.val_loop.metrics) == set(runner.test_loop.metrics) == {"accuracy"}
    assert runner.val_loop.last_metrics == {}
    metrics = runner.val()
    assert runner.val_loop.last_metrics == metrics and set(metrics) == {"accuracy", "loss"}
    with torch.no_grad():
        x, y = data(16).tensors
        logits = runner.model(x)
    assert metrics["accuracy"] == pytest.approx((logits.argmax(1) == y).float().mean().item())
    assert metrics["loss"] == pytest.approx(
        torch.nn.functional.cross_entropy(logits, y).item(), rel=1e-6)
    test_metrics = runner.test()
    assert runner.test_loop.last_metrics == test_metrics
    assert runner.message_hub.info["test_metrics"] == test_metrics
    assert runner.message_hub.latest("val/accuracy") == metrics["accuracy"]


def test_iteration_runs_validate_once_per_pass_unless_told(tmp_path):
    runner = make_runner(tmp_path, max_iters=7, val_dataloader=loader(16, shuffle=False))
    assert runner.val_interval == runner.train_loop.val_interval == 3  # len(train_dataloader)
    after_iters: list[int] = []
    runner.on("after_val_epoch", lambda r, metrics: after_iters.append(r.iter))
    runner.train()
    assert after_iters == [3, 6, 7]


def test_validation_runs_in_eval_mode_without_gradients_and_restores_the_mode(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Dropout(0.5))
    runner = make_runner(tmp_path, model=model, max_epochs=1,
                         val_dataloader=loader(16, shuffle=False))
    seen: list[tuple[bool, bool]] = []
    runner.on("before_val_iter",
              lambda r, **kw: seen.append((r.model.training, torch.is_grad_enabled())))
    runner.on("before_train_iter", lambda r, **kw: seen.append((r.model.training, True)))
    runner.train()
    assert seen == [(True, True)] * 3 + [(False, False)] * 2
    assert model.training  # back in training mode after the run's validation
    model.eval()
    runner.val()
    assert not model.training  # a standalone val() keeps the mode it found


def test_an_error_in_a_validation_forward_names_the_batch(tmp_path):
    error = ValueError("bad validation input")
    model = FailsAt(4, error)  # 3 training iterations, then the second validation batch
    runner = make_runner(tmp_path, model=model, max_epochs=1,
                         val_dataloader=loader(16, shuffle=False))
    with pytest.raises(ValueError, match="bad validation input") as info:
        runner.train()
    assert info.value is error
    assert any("val step of batch 1" in note for note in getattr(error, "__notes__", []))


def test_a_run_without_val_dataloader_has_no_val_loop(tmp_path):
    runner = make_runner(tmp_path, max_epochs=1)
    assert runner.val_loop is None and runner.test_loop is None and runner.val_dataloader is None
    runner.train()  # and training does not try to validate


# -- stopping -----------------------------------------------------------------------------------

@pytest.mark.parametrize("length", [{"max_epochs": 3}, {"max_iters": 9}])
def test_stop_training_set_in_after_train_iter_stops_after_that_iteration(tmp_path, length):
    stages = Stages()
    runner = make_runner(tmp_path, hooks=[stages], **length)

    @runner.on("after_train_iter")
    def stop(r, batch_idx, data_batch=None, outputs=None):
        if r.iter == 4:
            r.stop_training = True

    runner.train()
    assert runner.iter == 5 and len(stages.of("before_train_iter")) == 5
    assert runner.stop_training and runner.train_loop.stop_training
    assert stages.calls[-1][0] == "after_train"


def test_lengths_and_val_interval_in_the_train_loop_config_are_honoured(tmp_path):
    """MMEngine users write them in train_cfg; the Runner's own arguments fill the rest."""
    spec = {"type": "EpochBasedTrainLoop", "val_interval": 2}
    runner = make_runner(tmp_path, max_epochs=4, train_loop=spec,
                         val_dataloader=loader(16, shuffle=False))
    assert runner.train_loop.val_interval == 2
    own = make_runner(tmp_path / "own",
                      train_loop={"type": "IterBasedTrainLoop", "max_iters": 6})
    assert own.max_iters == 6 and not own.by_epoch
    with pytest.raises(ConfigError, match="val_interval is 3 for the Runner and 2 in train_loop"):
        make_runner(tmp_path / "both", max_epochs=4, val_interval=3, train_loop=spec)


def test_a_stop_set_as_an_epoch_begins_runs_no_batch_of_it(tmp_path):
    """``stop_training`` set in ``before_train_epoch`` (Lightning's ``on_train_epoch_start``)
    ends the run before the epoch's first batch; resuming goes on from that epoch's start."""
    class StopAtEpoch2(Hook):
        def before_train_epoch(self, runner):
            if runner.epoch == 1:
                runner.stop_training = True

    runner = make_toy_runner(tmp_path, max_epochs=3, hooks=[StopAtEpoch2()])
    runner.train()
    assert (runner.epoch, runner.iter) == (1, 8)  # epoch 1's 8 iterations, none of epoch 2


@pytest.mark.parametrize("length", [{"max_epochs": 4}, {"max_iters": 12}])
def test_a_run_stop_training_ended_says_so_in_log_txt(tmp_path, length):
    """Whoever set stop_training (a Keras or Lightning callback) may only have said so on the
    console: the Runner's own line goes to log.txt too, once."""
    runner = make_runner(tmp_path, **length)
    runner.on("after_train_iter", lambda r: setattr(r, "stop_training", True),
              when=lambda r: r.iter == 4)
    runner.train()
    log = (tmp_path / "log.txt").read_text()
    assert log.count("training stopped early") == 1 and "stop_training was set" in log
    runner.train()  # nothing left: said by the other line, not this one again
    assert (tmp_path / "log.txt").read_text().count("training stopped early") == 1
