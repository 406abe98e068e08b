"""Hooks and integrations on a train dataloader without a length (an IterableDataset): each
adapts (learning the length when the first pass ends, as the loops do) or refuses its option
with one ConfigError before training, never a TypeError from ``len()`` inside hookline."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import ConfigError, Hook, HookError, Runner
from hookline.compat.mmcv.runner import Hook as MmcvHook
from hookline.compat.mmengine.hooks import EMAHook, ParamSchedulerHook
from hookline.hooks import EvalHook, KerasCallback, LrUpdaterHook, MomentumUpdaterHook, TensorboardLoggerHook

from ..engine.toy import Stream
from ._toy import one_thread  # noqa: F401  (autouse fixture)


class Shrinking(Stream):
    """A stream whose passes get shorter: 5, then 3, then 1 batches of 8."""

    def __iter__(self):
        self.passes += 1
        for i in range(max(8, len(self.x) - 16 * (self.passes - 1))):
            yield self.x[i], self.y[i]


class SizedStream(Stream):
    """The same samples with a length: the sized path, to compare with."""

    def __len__(self) -> int:
        return len(self.x)


def make(tmp_path: Path, hooks=(), *, data: Stream | None = None, val: bool = False,
         **kwargs) -> Runner:
    torch.manual_seed(0)
    if "max_iters" not in kwargs:
        kwargs.setdefault("max_epochs", 2)
    val_loader = DataLoader(SizedStream(16, seed=1), batch_size=8) if val else None
    default_hooks = {"logger": None, "progress": None, "checkpoint": None,
                     **kwargs.pop("default_hooks", {})}
    return Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1, "momentum": 0.9},
                  loss_fn=torch.nn.CrossEntropyLoss(), metrics={"acc": "accuracy"},
                  train_dataloader=DataLoader(Stream() if data is None else data, batch_size=8),
                  val_dataloader=val_loader, work_dir=tmp_path, hooks=list(hooks),
                  default_hooks=default_hooks, device="cpu", **kwargs)


def config_error(runner: Runner) -> ConfigError:
    """The ConfigError a hook raised when training started (the Runner reports it in a
    HookError naming the hook and the stage)."""
    with pytest.raises(HookError) as caught:
        runner.train()
    assert isinstance(caught.value.__cause__, ConfigError), caught.value
    return caught.value.__cause__


class Lrs(Hook):
    """The lr and momentum each iteration trains with."""

    def __init__(self) -> None:
        self.lrs: list[float] = []
        self.momenta: list[float] = []

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        group = runner.optimizer.param_groups[0]
        self.lrs.append(group["lr"])
        self.momenta.append(group["momentum"])


# -- Hook.end_of_epoch (and mmcv's) ------------------------------------------------------------

def test_end_of_epoch_is_exact_for_each_pass_even_when_passes_change_length(tmp_path):
    seen = []

    class Ends(Hook):
        def before_train_iter(self, runner, batch_idx, data_batch=None):
            seen.append(("before", runner.epoch, batch_idx,
                         self.end_of_epoch(runner.train_dataloader, batch_idx)))

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            seen.append(("after", runner.epoch, batch_idx,
                         self.end_of_epoch(runner.train_dataloader, batch_idx)))

    make(tmp_path, [Ends()], data=Shrinking(), max_epochs=3).train()
    ends = [(stage, epoch, batch) for stage, epoch, batch, end in seen if end]
    assert ends == [("before", 0, 4), ("after", 0, 4), ("before", 1, 2), ("after", 1, 2),
                    ("before", 2, 0), ("after", 2, 0)]
    assert len(seen) == 2 * (5 + 3 + 1)
    assert not Hook.end_of_epoch(DataLoader(Stream(), batch_size=8), 4)  # no pass running


def test_mmcv_end_of_epoch_and_inner_iter_without_a_length(tmp_path):
    calls = []

    class Helpers(MmcvHook):
        def after_train_iter(self, runner):
            calls.append((runner.inner_iter, self.end_of_epoch(runner), self.is_last_iter(runner)))

    make(tmp_path / "epochs", [Helpers()], max_epochs=2).train()
    assert [c[0] for c in calls] == [0, 1, 2, 3, 4] * 2
    assert [c[1] for c in calls] == [False] * 4 + [True] + [False] * 4 + [True]
    assert [c[2] for c in calls] == [False] * 9 + [True]
    calls.clear()
    make(tmp_path / "iters", [Helpers()], max_iters=12).train()
    # the position in the pass: the first pass's length is learnt when it ends
    assert [c[0] for c in calls] == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]
    assert [c[2] for c in calls] == [False] * 11 + [True]


# -- EvalHook ----------------------------------------------------------------------------------

def test_eval_hook_counting_passes_in_a_max_iters_run_is_one_config_error(tmp_path):
    evaluation = EvalHook(DataLoader(SizedStream(16), batch_size=8), by_epoch=True)
    runner = make(tmp_path, [evaluation], max_iters=12)
    error = config_error(runner)
    assert "EvalHook(by_epoch=True)" in str(error) and "by_epoch=False" in str(error) \
        and "no length" in str(error)
    assert runner.iter == 0


@pytest.mark.parametrize(("kwargs", "hook_args", "evaluated_at"), [
    ({"max_iters": 12}, {"by_epoch": False, "interval": 4}, [4, 8, 12]),
    ({"max_epochs": 3}, {"by_epoch": True, "interval": 2}, [10]),
])
def test_eval_hook_runs_without_a_length(tmp_path, kwargs, hook_args, evaluated_at):
    evaluation = EvalHook(DataLoader(SizedStream(16), batch_size=8), **hook_args)
    runner = make(tmp_path, [evaluation], **kwargs)
    evaluated = []
    runner.on("after_val_epoch", lambda runner, **kw: evaluated.append(runner.iter))
    runner.train()
    assert evaluated == evaluated_at


# -- TensorboardLoggerHook -----------------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "steps"), [({"max_epochs": 3}, [5, 10, 15]),
                                               ({"max_iters": 16}, [10, 15])])
def test_tensorboard_histograms_default_to_once_per_pass_once_its_length_is_known(
        tmp_path, kwargs, steps):
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    make(tmp_path, [TensorboardLoggerHook(histograms=True)], **kwargs).train()
    events = event_accumulator.EventAccumulator(str(tmp_path / "tf_logs"),
                                                size_guidance={"histograms": 0})
    events.Reload()
    assert [h.step for h in events.Histograms("params/weight")] == steps
    assert [h.step for h in events.Histograms("grads/weight")] == steps


# -- LrUpdaterHook / MomentumUpdaterHook ---------------------------------------------------------

@pytest.mark.parametrize(("hook", "kwargs", "expected"), [
    (LrUpdaterHook, {"warmup": "linear", "warmup_iters": 1, "warmup_by_epoch": True},
     r"LrUpdaterHook\(warmup_by_epoch=True\) needs the batches per epoch.*no length.*"
     r"give warmup_iters in iterations"),
    (LrUpdaterHook, {"policy": "cosine", "by_epoch": False},
     r"LrUpdaterHook policy 'cosine' by iteration \(by_epoch=False\) needs the run's "
     r"iterations.*no length.*by_epoch=True, or train with max_iters"),
    (MomentumUpdaterHook, {"policy": "cosine", "by_epoch": False},
     r"MomentumUpdaterHook policy 'cosine' by iteration.*by_epoch=True, or train with max_iters"),
    (MomentumUpdaterHook, {"policy": "step", "step": 1, "warmup": "linear", "warmup_iters": 1,
                           "warmup_by_epoch": True},
     r"MomentumUpdaterHook\(warmup_by_epoch=True\) needs the batches per epoch"),
])
def test_updater_options_that_need_the_epoch_length_are_config_errors(tmp_path, hook, kwargs,
                                                                    expected):
    runner = make(tmp_path, [hook(**kwargs)])
    error = config_error(runner)
    assert re.search(expected, str(error)), str(error)
    assert runner.iter == 0


@pytest.mark.parametrize(("kwargs", "lr_args", "momentum_args"), [
    ({"max_epochs": 3}, {"policy": "cosine", "warmup": "linear", "warmup_iters": 3},
     {"policy": "cosine", "min_momentum": 0.5}),
    ({"max_epochs": 3}, {"policy": "step", "step": 1, "by_epoch": False},
     {"policy": "step", "step": 4, "by_epoch": False}),
    ({"max_iters": 12}, {"policy": "cosine", "by_epoch": False, "warmup": "exp", "warmup_iters": 4},
     {"policy": "onecycle"}),
])
def test_updaters_without_a_length_follow_the_sized_schedule(tmp_path, kwargs, lr_args,
                                                             momentum_args):
    runs = []
    for name, data in (("sized", SizedStream()), ("stream", Stream())):
        record = Lrs()
        make(tmp_path / name, [LrUpdaterHook(**lr_args), MomentumUpdaterHook(**momentum_args),
                               record], data=data, **kwargs).train()
        runs.append(record)
    sized, stream = runs
    assert len(stream.lrs) == (15 if "max_epochs" in kwargs else 12)
    assert stream.lrs == pytest.approx(sized.lrs) and stream.momenta == pytest.approx(sized.momenta)
    assert len(set(stream.lrs)) > 2 and len(set(stream.momenta)) > 1  # they did change


# -- MMEngine's ParamSchedulerHook and EMAHook ------------------------------------------------------

def test_mmengine_param_scheduler_and_ema_hooks_without_a_length(tmp_path):
    for kwargs, ema in (({"max_iters": 12}, {"begin_iter": 2}),
                        ({"max_epochs": 2}, {"begin_iter": 2}),
                        ({"max_iters": 12}, {"begin_epoch": 1})):
        work_dir = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        record = Lrs()
        runner = make(work_dir, [ParamSchedulerHook(), EMAHook(**ema), record],
                      param_scheduler={"type": "StepLR", "step_size": 5, "gamma": 0.5,
                                       "by_epoch": False},
                      default_hooks={"param_scheduler": None}, **kwargs)
        runner.train()
        assert record.lrs[:6] == pytest.approx([0.1] * 5 + [0.05])


# -- Keras and Lightning ------------------------------------------------------------------------

def test_keras_callbacks_get_steps_none_as_keras_gives_for_unknown_cardinality(tmp_path):
    class Params:  # a duck-typed Keras callback (integrations) and hookline's KerasCallback
        params: dict = {}

        def on_train_begin(self, logs=None):
            got.append(dict(self.params))

    class Native(KerasCallback):
        def on_train_begin(self, logs=None):
            got.append({k: self.params[k] for k in ("epochs", "steps")})

    got: list[dict] = []
    make(tmp_path / "a", [Params(), Native()], max_epochs=2).train()
    assert got == [{"verbose": "auto", "epochs": 2, "steps": None}, {"epochs": 2, "steps": None}]
    got.clear()
    make(tmp_path / "b", [Params(), Native()], data=SizedStream(), max_epochs=2).train()
    assert got[0]["steps"] == got[1]["steps"] == 5


def test_lightning_trainer_counts_an_iterable_as_lightning_does(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")
    seen = []

    class Counts(pl.Callback):
        def on_train_start(self, trainer, pl_module):
            seen.append(("start", trainer.num_training_batches,
                         trainer.estimated_stepping_batches, trainer.num_val_batches))

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            seen.append(batch_idx)

    make(tmp_path / "epochs", [Counts()], max_epochs=2).train()
    assert seen[0] == ("start", math.inf, -1, [])  # Lightning: max_steps for an iterable
    assert seen[1:] == [0, 1, 2, 3, 4] * 2
    seen.clear()
    make(tmp_path / "iters", [Counts()], max_iters=7, val=True).train()
    assert seen[0] == ("start", math.inf, 7, [2])
    assert seen[1:] == [0, 1, 2, 3, 4, 0, 1]
    seen.clear()
    make(tmp_path / "sized", [Counts()], data=SizedStream(), max_epochs=2).train()
    assert seen[0] == ("start", 5, 10, [])
