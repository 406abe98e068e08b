"""Lightning callbacks and modules in a hookline Runner, side by side with a real
``lightning.Trainer.fit``: what a Lightning user sees in setup and resume order, ``self.log`` of
a callback (also with a plain torch model), ``global_step`` under a changing accumulation, the
loss ``on_train_batch_end`` gets, when epoch values reach ``callback_metrics``, Ctrl-C,
``trainer.logger.experiment``, a named scheduler in ``LearningRateMonitor`` and a mid-epoch
resume."""

from __future__ import annotations

import glob
import os
import signal
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.core import ConfigError, HookError
from hookline.engine.signals import TrainingInterrupted
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

pl = pytest.importorskip("lightning.pytorch")

from lightning.pytorch.callbacks import (  # noqa: E402
    GradientAccumulationScheduler,
    LearningRateMonitor,
    ModelCheckpoint,
)

QUIET = {"logger": None, "progress": None, "checkpoint": None}
SAVING = {"logger": None, "progress": None, "checkpoint": {"type": "CheckpointHook", "interval": 1}}


@pytest.fixture(autouse=True)
def quiet_lightning():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="lightning")
        warnings.filterwarnings("ignore", message=".*(does not have many workers|LeafSpec).*")
        yield


def loaders(batch: int = 16, n: int = 40) -> tuple[DataLoader, DataLoader]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=generator)
    xv = torch.randn(20, 4, generator=generator)
    return (DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=batch),
            DataLoader(TensorDataset(xv, (xv[:, 0] > 0).long()), batch_size=batch))


class Lit(pl.LightningModule):
    def __init__(self, log_train: bool = True) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Linear(4, 2)
        self.log_train = log_train

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        if self.log_train:
            self.log("train_loss", loss, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)


def lightning_fit(callbacks: list[Any], model: Any = None, epochs: int = 2, ckpt_path: Any = None,
                  root: str | None = None, n: int = 40, **kwargs: Any) -> Any:
    root = root or tempfile.mkdtemp()
    options: dict[str, Any] = dict(
        max_epochs=epochs, accelerator="cpu", devices=1, enable_progress_bar=False,
        enable_checkpointing=False, enable_model_summary=False, num_sanity_val_steps=0,
        logger=False, default_root_dir=root, callbacks=callbacks)
    options.update(kwargs)
    trainer = pl.Trainer(**options)
    train, val = loaders(n=n)
    trainer.fit(model if model is not None else Lit(), train, val, ckpt_path=ckpt_path)
    return trainer


def hookline_runner(callbacks: list[Any], model: Any = None, epochs: int = 2,
                    work_dir: Path | str | None = None, n: int = 40, **kwargs: Any) -> Runner:
    train, val = loaders(n=n)
    options: dict[str, Any] = dict(train_dataloader=train, val_dataloader=val, max_epochs=epochs,
                                   work_dir=work_dir or tempfile.mkdtemp(), default_hooks=QUIET,
                                   hooks=callbacks)
    options.update(kwargs)
    return Runner(model if model is not None else Lit(), **options)


def plain_runner(callbacks: list[Any], epochs: int = 2, **kwargs: Any) -> Runner:
    torch.manual_seed(0)
    train, val = loaders()
    return Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.5},
                  loss_fn=torch.nn.CrossEntropyLoss(), train_dataloader=train,
                  val_dataloader=val, max_epochs=epochs, work_dir=tempfile.mkdtemp(),
                  default_hooks=QUIET, hooks=callbacks, **kwargs)


def rounded(metrics: dict[str, Any], prefix: str = "") -> dict[str, float]:
    return {k: round(float(v), 4) for k, v in sorted(metrics.items()) if k.startswith(prefix)}


# -- 1: setup runs before a resumed checkpoint goes in ----------------------------------------------
class Tracker(pl.Callback):
    """Creates its state in setup() (fresh per fit), restored by load_state_dict on resume."""

    def __init__(self, events: list[tuple]) -> None:
        self.events = events

    def setup(self, trainer, pl_module, stage):
        self.best = float("inf")
        self.events.append(("setup", str(stage), trainer.current_epoch, trainer.global_step,
                            trainer.training))

    def on_validation_epoch_end(self, trainer, pl_module):
        self.best = min(self.best, round(float(trainer.callback_metrics["val_loss"]), 5))

    def state_dict(self):
        return {"best": self.best}  # AttributeError before setup()

    def on_load_checkpoint(self, trainer, pl_module, checkpoint):
        self.events.append(("on_load_checkpoint",))

    def load_state_dict(self, state_dict):
        self.events.append(("load_state_dict", state_dict["best"]))
        self.best = state_dict["best"]


class SetsUp(Lit):
    def __init__(self, events: list[tuple]) -> None:
        super().__init__()
        self.events = events

    def setup(self, stage):
        self.events.append(("module setup", str(stage), self.trainer.global_step))

    def on_load_checkpoint(self, checkpoint):
        self.events.append(("module on_load_checkpoint",))


def test_setup_runs_before_a_resumed_checkpoint_is_restored_as_in_lightning():
    root = tempfile.mkdtemp()
    lightning_fit([Tracker([]), ModelCheckpoint(dirpath=root, save_top_k=-1)], SetsUp([]),
                  root=root, enable_checkpointing=True)
    lightning_events: list[tuple] = []
    resumed = Tracker(lightning_events)
    lightning_fit([resumed, ModelCheckpoint(dirpath=root + "/2")], SetsUp(lightning_events),
                  epochs=3, root=root, enable_checkpointing=True,
                  ckpt_path=glob.glob(root + "/*epoch=1*.ckpt")[0])

    work_dir = tempfile.mkdtemp()
    hookline_runner([Tracker([])], SetsUp([]), work_dir=work_dir, default_hooks=SAVING).train()
    events: list[tuple] = []
    tracker = Tracker(events)
    hookline_runner([tracker], SetsUp(events), epochs=3, work_dir=work_dir, default_hooks=SAVING,
                    resume=os.path.join(work_dir, "epoch_2.pth")).train()

    # setup (counters still 0), the module's on_load_checkpoint, the callbacks', load_state_dict
    assert events[:4] == lightning_events[:4]
    assert events[0] == ("setup", "TrainerFn.FITTING", 0, 0, True)
    assert tracker.best == resumed.best  # restored, then improved in epoch 3: not reset


# -- 2 and 7: self.log in a callback, pl_module.log with a plain torch model ----------------------
class Logs(pl.Callback):
    def __init__(self, use_self: bool) -> None:
        self.use_self, self.seen = use_self, []

    def _log(self, pl_module, name, value, **kwargs):
        (self.log if self.use_self else pl_module.log)(name, value, **kwargs)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._log(pl_module, "cb_step", float(batch_idx), on_step=True, on_epoch=True)

    def on_validation_epoch_end(self, trainer, pl_module):
        self._log(pl_module, "cb_val", trainer.current_epoch + 0.5)

    def on_train_epoch_end(self, trainer, pl_module):
        self.seen.append(rounded(trainer.callback_metrics, "cb"))


@pytest.mark.parametrize("use_self", [True, False])
def test_a_callbacks_log_is_the_modules_as_in_lightning(use_self):
    expected = Logs(use_self)
    lightning_fit([expected], Lit(log_train=False))
    assert expected.seen[0] == {"cb_step": 0.8, "cb_step_epoch": 0.8, "cb_step_step": 2.0,
                                "cb_val": 0.5}
    with_module, with_plain_model = Logs(use_self), Logs(use_self)
    hookline_runner([with_module], Lit(log_train=False)).train()
    plain_runner([with_plain_model]).train()
    assert with_module.seen == expected.seen
    assert with_plain_model.seen == expected.seen  # on_step / on_epoch honoured


class LogsBadly(pl.Callback):
    def __init__(self, value: Any) -> None:
        self.value = value

    def on_validation_epoch_end(self, trainer, pl_module):
        pl_module.log("bad", self.value)


@pytest.mark.parametrize(("value", "says"), [
    (torch.ones(3), r"needs one number, got a tensor of shape \(3,\)"),
    ({"a": 1.0}, "got a dict: log each entry under its own name"),
    ("high", "takes a number, a one-element tensor or a torchmetrics Metric, got str"),
])
def test_a_plain_models_log_refuses_what_lightning_refuses_with_a_config_error(value, says):
    with pytest.raises(HookError) as failure:
        plain_runner([LogsBadly(value)], epochs=1).train()
    assert isinstance(failure.value.__cause__, ConfigError)
    assert failure.match(says)


def test_a_plain_models_log_outside_the_run_is_a_config_error():
    callback = Logs(True)
    runner = plain_runner([callback], epochs=1)
    runner.train()
    with pytest.raises(ConfigError, match="outside a training, validation or test"):
        callback.log("late", 1.0)


# -- 3: global_step counts the optimizer steps, across a resume -----------------------------------
class Steps(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[tuple[int, int, int]] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.seen.append((trainer.current_epoch, batch_idx, trainer.global_step))


def test_global_step_counts_steps_when_the_accumulation_changes_and_across_a_resume(tmp_path):
    schedule = {0: 2, 1: 3}
    expected = Steps()
    lightning_fit([expected, GradientAccumulationScheduler(schedule)], epochs=3, n=80)
    assert expected.seen[-1] == (2, 4, 7)  # 5 batches an epoch (n=80, batch 16): 3 + 2 + 2 steps

    kwargs = dict(n=80, default_hooks=SAVING)
    seen = Steps()
    hookline_runner([seen, GradientAccumulationScheduler(schedule)], epochs=3,
                    work_dir=tmp_path, **kwargs).train()
    assert seen.seen == expected.seen

    resumed = Steps()
    hookline_runner([resumed, GradientAccumulationScheduler(schedule)], epochs=3,
                    work_dir=tmp_path, resume=tmp_path / "epoch_2.pth", **kwargs).train()
    assert resumed.seen == expected.seen[10:]  # exact after the resume too


# -- 4: on_train_batch_end gets the loss Lightning backpropagates ---------------------------------
class Losses(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[float] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.seen.append(round(float(outputs["loss"]), 4))


def test_under_accumulation_on_train_batch_end_gets_the_loss_divided_as_in_lightning():
    expected, seen = Losses(), Losses()
    lightning_fit([expected], Lit(log_train=False), epochs=1, accumulate_grad_batches=2)
    runner = hookline_runner([seen], Lit(log_train=False), epochs=1,
                             optim_wrapper={"accumulative_counts": 2})
    runner.train()
    # the first group is the same in both (hookline scales a last, shorter group by its size)
    assert seen.seen[:2] == expected.seen[:2]
    # hookline's own log keeps the undivided loss
    assert runner.message_hub.latest("train/loss") == pytest.approx(seen.seen[-1] * 2, abs=1e-3)


# -- 5 and the state flags: when values reach callback_metrics ------------------------------------
class Trace(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def _record(self, name: str, trainer: Any) -> None:
        self.seen.append((name, trainer.current_epoch, rounded(trainer.callback_metrics),
                          trainer.training, trainer.validating))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._record("on_train_batch_end", trainer)

    def on_validation_start(self, trainer, pl_module):
        self._record("on_validation_start", trainer)

    def on_validation_end(self, trainer, pl_module):
        self._record("on_validation_end", trainer)

    def on_train_epoch_end(self, trainer, pl_module):
        self._record("on_train_epoch_end", trainer)

    def on_train_end(self, trainer, pl_module):
        self._record("on_train_end", trainer)

    def on_fit_end(self, trainer, pl_module):
        self._record("on_fit_end", trainer)

    def teardown(self, trainer, pl_module, stage):
        self._record("teardown", trainer)


def test_epoch_values_reach_callback_metrics_at_the_epochs_end_as_in_lightning():
    expected, seen = Trace(), Trace()
    lightning_fit([expected])
    runner = hookline_runner([seen])
    runner.train()
    # hookline adds the training step's own outputs ("loss"): compare Lightning's names
    for record in seen.seen:
        record[2].pop("loss", None)
    assert seen.seen == expected.seen
    assert "train/train_loss_epoch" in runner.message_hub.log_scalars  # LoggerHook still has it


# -- 6: Ctrl-C ---------------------------------------------------------------------------------
class Interrupts(Lit):
    def training_step(self, batch, batch_idx):
        if batch_idx == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return super().training_step(batch, batch_idx)


class Failure(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def on_exception(self, trainer, pl_module, exception):
        self.seen.append((type(exception), trainer.interrupted, type(exception.__cause__)))


def test_ctrl_c_reaches_on_exception_as_a_keyboard_interrupt_and_sets_interrupted():
    failure = Failure()
    runner = hookline_runner([failure], Interrupts())
    with pytest.raises(TrainingInterrupted):
        runner.train()
    # Lightning (which then exits with sys.exit(1)) passes KeyboardInterrupt, interrupted=True
    assert failure.seen == [(KeyboardInterrupt, True, TrainingInterrupted)]
    trainer = next(h for h in runner.hooks.hooks if type(h).__name__ == "LightningTrainer")
    runner.val()  # a new run: no longer interrupted
    assert trainer.interrupted is False


# -- 8: trainer.logger.experiment ------------------------------------------------------------------
class Experiment(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_validation_epoch_end(self, trainer, pl_module):
        trainer.logger.experiment.add_scalar("my_scalar", 3.0, trainer.global_step)
        self.seen.append(type(trainer.logger.experiment).__name__)


def test_logger_experiment_is_the_tensorboard_writer_or_says_how_to_get_one(tmp_path):
    pytest.importorskip("tensorboard")
    with pytest.raises(HookError) as failure:
        hookline_runner([Experiment()], epochs=1).train()
    assert isinstance(failure.value.__cause__, AttributeError)
    assert failure.match("add hookline's TensorboardLoggerHook")
    callback = Experiment()
    hookline_runner([callback, {"type": "TensorboardLoggerHook"}], epochs=1,
                    work_dir=tmp_path).train()
    assert callback.seen == ["SummaryWriter"]
    assert list((tmp_path / "tf_logs").glob("events.out.tfevents.*"))


# -- 9: a named scheduler in LearningRateMonitor --------------------------------------------------
class Named(Lit):
    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.5)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": scheduler, "interval": "step", "name": "my_lr"}}


def test_learning_rate_monitor_logs_under_the_schedulers_name():
    expected, seen = LearningRateMonitor(), LearningRateMonitor()
    lightning_fit([expected], Named(), logger=pl.loggers.CSVLogger(tempfile.mkdtemp()),
                  log_every_n_steps=1)
    hookline_runner([seen], Named(), default_hooks={"logger": {"type": "LoggerHook",
                                                               "interval": 1}}).train()
    assert list(expected.lrs) == ["my_lr"]
    assert seen.lrs == expected.lrs


# -- 10: a mid-epoch resume ----------------------------------------------------------------------
class Epochs(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def on_train_epoch_start(self, trainer, pl_module):
        self.seen.append(("on_train_epoch_start", trainer.current_epoch, trainer.global_step))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.seen.append(("on_train_batch_end", trainer.current_epoch, batch_idx,
                          trainer.global_step))


def test_a_mid_epoch_resume_does_not_start_the_epoch_again_as_in_lightning(tmp_path):
    root = tempfile.mkdtemp()
    saving = ModelCheckpoint(dirpath=root, every_n_train_steps=2, save_top_k=-1)
    lightning_fit([saving], epochs=1, root=root, enable_checkpointing=True)
    expected = Epochs()
    lightning_fit([expected, ModelCheckpoint(dirpath=root + "/2")], root=root,
                  enable_checkpointing=True, ckpt_path=glob.glob(root + "/*step=2.ckpt")[0])

    hooks = {"logger": None, "progress": None,
             "checkpoint": {"type": "CheckpointHook", "interval": 2, "by_epoch": False}}
    hookline_runner([], epochs=1, work_dir=tmp_path, default_hooks=hooks).train()
    seen = Epochs()
    hookline_runner([seen], work_dir=tmp_path, default_hooks=hooks,
                    resume=tmp_path / "iter_2.pth").train()
    assert seen.seen == expected.seen
    assert seen.seen[0][0] == "on_train_batch_end"


# -- fit_loop.epoch_loop: the batch in progress ---------------------------------------------------
class BatchIndexes(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int]] = []

    def _note(self, where: str, trainer: Any) -> None:
        loop = trainer.fit_loop.epoch_loop
        self.seen.append((where, loop.batch_idx, loop.total_batch_idx))

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._note("start", trainer)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._note("end", trainer)


def test_epoch_loop_batch_indexes_are_lightnings():
    lightning = BatchIndexes()
    lightning_fit([lightning])
    ours = BatchIndexes()
    hookline_runner([ours]).train()
    assert ours.seen == lightning.seen
    assert ours.seen[-1] == ("end", 2, 5)  # 3 batches an epoch, 2 epochs


def test_an_unknown_epoch_loop_attribute_names_its_own_path():
    class ReadsUnknown(pl.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            trainer.fit_loop.epoch_loop.nope  # noqa: B018

    with pytest.raises(HookError) as err:
        hookline_runner([ReadsUnknown()]).train()
    assert "trainer.fit_loop.epoch_loop.nope" in str(err.value.__cause__)
