"""Loop subclasses written for MMEngine run in a hookline Runner: ``run_epoch`` overrides that
return None (MMEngine's) train every epoch, ``run_iter`` has MMEngine's signature in each loop,
a ``ValLoop.run`` of one's own that reports through ``runner.call_hook("after_val_epoch",
metrics=...)`` puts its metrics in the message hub, and MMEngine's ``train_cfg`` form
(``by_epoch``, ``IterBasedTrainLoop``'s own ``val_interval``) and hook priorities behave as
in MMEngine."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Hook, Runner
from hookline.engine import EpochBasedTrainLoop, IterBasedTrainLoop, ValLoop
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

QUIET = {"logger": None, "progress": None, "checkpoint": None}
calls: list[Any] = []


def _pairs(n: int = 16) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


def make(tmp_path, **kwargs: Any) -> Runner:
    torch.manual_seed(0)
    options: dict[str, Any] = dict(optimizer={"type": "SGD", "lr": 0.1},
                                   loss_fn=torch.nn.CrossEntropyLoss(),
                                   train_dataloader=DataLoader(_pairs(), batch_size=4),
                                   work_dir=str(tmp_path), default_hooks=QUIET)
    options.update(kwargs)
    return Runner(torch.nn.Linear(4, 2), **options)


class EpochsLikeMMEngine(EpochBasedTrainLoop):
    """``run_epoch`` as MMEngine's subclasses write it: extra work, super(), no return."""

    def run_epoch(self) -> None:  # type: ignore[override]
        calls.append(("epoch", self.epoch))
        super().run_epoch()


class IterationsLikeMMEngine(EpochBasedTrainLoop):
    def run_iter(self, idx: int, data_batch: Any) -> None:
        calls.append(("iter", idx))
        super().run_iter(idx, data_batch)


class PassesLikeMMEngine(IterBasedTrainLoop):
    def run_iter(self, data_batch: Any) -> None:
        calls.append(("iter", self.iter))
        super().run_iter(data_batch)


class ValItersLikeMMEngine(ValLoop):
    @torch.no_grad()
    def run_iter(self, idx: int, data_batch: Any) -> None:
        calls.append(("val", idx))
        super().run_iter(idx, data_batch)


class OwnValRun(ValLoop):
    """A validation of one's own (mmdet's teacher/student style): metrics reported through
    ``call_hook``, as MMEngine's loops do."""

    def run(self) -> dict[str, Any]:
        self.runner.call_hook("before_val")
        self.runner.call_hook("before_val_epoch")
        metrics = {"accuracy": 0.25, "teacher/accuracy": 0.5}
        self.runner.call_hook("after_val_epoch", metrics=metrics)
        self.runner.call_hook("after_val")
        return metrics


@pytest.fixture(autouse=True)
def _fresh() -> None:
    calls.clear()


def test_a_run_epoch_override_returning_none_trains_every_epoch(tmp_path) -> None:
    runner = make(tmp_path, train_loop={"type": EpochsLikeMMEngine}, max_epochs=3)
    runner.train()
    assert calls == [("epoch", 0), ("epoch", 1), ("epoch", 2)] and runner.iter == 12


def test_a_run_epoch_override_still_stops_where_training_stops(tmp_path) -> None:
    runner = make(tmp_path, train_loop={"type": EpochsLikeMMEngine}, max_epochs=3)
    runner.on("after_train_iter", lambda r: setattr(r.train_loop, "stop_training", True),
              when=lambda r: r.iter == 5)
    runner.train()
    assert calls == [("epoch", 0), ("epoch", 1)] and runner.iter == 6 and runner.epoch == 1


def test_run_iter_overrides_with_mmengines_signatures(tmp_path) -> None:
    runner = make(tmp_path, train_loop={"type": IterationsLikeMMEngine}, max_epochs=2,
                  val_dataloader=DataLoader(_pairs(8), batch_size=4),
                  val_loop={"type": ValItersLikeMMEngine}, metrics={"acc": "accuracy"})
    runner.train()
    one_epoch = [("iter", i) for i in range(4)] + [("val", 0), ("val", 1)]
    assert calls == one_epoch * 2
    calls.clear()
    runner = make(tmp_path / "iters", train_loop={"type": PassesLikeMMEngine, "max_iters": 6,
                                                  "val_interval": 100})
    runner.train()
    assert calls == [("iter", i) for i in range(6)] and runner.iter == 6


def test_metrics_a_loop_of_ones_own_reports_reach_the_message_hub(tmp_path) -> None:
    seen: dict[str, Any] = {}

    class Reads(Hook):
        def after_val_epoch(self, runner: Runner, metrics: Any = None) -> None:
            seen["scalar"] = runner.message_hub.get_scalar("val/accuracy").current()
            seen["teacher"] = runner.message_hub.get_scalar("val/teacher/accuracy").current()

    runner = make(tmp_path, val_dataloader=DataLoader(_pairs(8), batch_size=4),
                  val_loop={"type": OwnValRun}, max_epochs=1, hooks=[Reads()])
    runner.train()
    assert seen == {"scalar": 0.25, "teacher": 0.5}
    assert runner.val_loop.last_metrics == {"accuracy": 0.25, "teacher/accuracy": 0.5}


def test_mmengines_train_cfg_by_epoch_picks_the_loop(tmp_path) -> None:
    runner = make(tmp_path, train_loop={"by_epoch": True, "max_epochs": 2, "val_interval": 1})
    assert isinstance(runner.train_loop, EpochBasedTrainLoop) and runner.max_epochs == 2
    runner = make(tmp_path, train_loop={"by_epoch": False, "max_iters": 5})
    assert isinstance(runner.train_loop, IterBasedTrainLoop)
    with pytest.raises(ConfigError, match="by_epoch=True counts the run in max_epochs"):
        make(tmp_path, train_loop={"by_epoch": True, "max_iters": 5})


def test_a_named_iter_based_loop_keeps_its_own_val_interval(tmp_path) -> None:
    val = DataLoader(_pairs(8), batch_size=4)
    named = make(tmp_path, train_loop={"type": "IterBasedTrainLoop", "max_iters": 10},
                 val_dataloader=val, metrics={"acc": "accuracy"})
    plain = make(tmp_path, max_iters=10, val_dataloader=val, metrics={"acc": "accuracy"})
    assert named.train_loop.val_interval == 1000  # MMEngine's default for that loop
    assert plain.train_loop.val_interval == 4  # hookline's: one pass over the data


def test_a_priority_given_at_registration_is_the_hooks(tmp_path) -> None:
    runner = make(tmp_path, max_epochs=1)
    hook = Hook()
    runner.register_hook(hook, priority="HIGHEST")
    built = runner.register_hook({"type": "EMAHook", "priority": 49}).hook
    assert hook.priority == "HIGHEST" and built.priority == 49


def test_clipping_by_value_records_no_grad_norm(tmp_path) -> None:
    runner = make(tmp_path, optimizer=None, max_epochs=1, optim_wrapper={
        "optimizer": {"type": "SGD", "lr": 0.1}, "clip_grad": {"type": "value", "clip_value": 0.01}})
    runner.train()
    assert "train/grad_norm" not in runner.message_hub.log_scalars


def test_from_cfg_says_what_to_do(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"Runner\(\*\*cfg\).*build_runner"):
        Runner.from_cfg({"model": None})


def test_get_hooks_info_lists_each_stage_as_mmengine(tmp_path) -> None:
    runner = make(tmp_path, max_epochs=1, default_hooks={"progress": None, "logger": None})
    info = runner.get_hooks_info()
    assert info.startswith("before_run:\n(") and info.endswith("\n -------------------- ")
    after_train_iter = info.split("after_train_iter:\n", 1)[1].split("\n -----", 1)[0]
    assert [line.rstrip() for line in after_train_iter.splitlines()] == [
        "(NORMAL      ) IterTimerHook", "(LOW         ) ParamSchedulerHook",
        "(VERY_LOW    ) CheckpointHook"]


class ValLoopLikeMMEngine(ValLoop):
    """MMEngine's ValLoop signature, as mmdet's / mmagic's subclasses write it."""

    def __init__(self, runner, dataloader, evaluator, fp16=False, tag="x") -> None:
        super().__init__(runner, dataloader, evaluator, fp16)
        self.tag = tag


class ValLoopByKeyword(ValLoop):
    def __init__(self, runner, dataloader, evaluator, fp16=False) -> None:
        super().__init__(runner, dataloader, evaluator=evaluator, fp16=fp16)


@pytest.mark.parametrize("loop", [ValLoopLikeMMEngine, ValLoopByKeyword])
def test_a_val_loop_with_mmengines_constructor_gets_the_runners_metrics(tmp_path, loop) -> None:
    runner = make(tmp_path, max_epochs=1, val_dataloader=DataLoader(_pairs(8), batch_size=4),
                  val_loop={"type": loop}, metrics={"acc": "accuracy"})
    runner.train()
    assert isinstance(runner.val_loop, loop) and set(runner.val_loop.last_metrics) == {
        "acc", "loss"}
