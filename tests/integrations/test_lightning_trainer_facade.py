"""The Lightning ``trainer`` a callback gets in a hookline run, compared with a real
``lightning.Trainer``: the attributes callbacks read (data loaders, precision, the checkpoint and
early-stopping callbacks, ``ckpt_path``, ``fit_loop``), ``callback_metrics`` per run,
``current_epoch`` after a stop, the outputs of a step that returned None, and callback order
by priority."""

from __future__ import annotations

import tempfile

import pytest
import torch

from hookline import Runner
from hookline.integrations.lightning_trainer_attrs import lightning_precision

from ._lightning_twins import both, fit_hookline, fit_lightning, one_thread, pl  # noqa: F401
from .lightning_toy import TinyRegressor, loader

callbacks = pl.callbacks
QUIET = {"logger": None, "progress": None, "checkpoint": None}

READS = {
    "precision": lambda t: t.precision,
    "datamodule": lambda t: t.datamodule,
    "checkpoint_callback": lambda t: t.checkpoint_callback,
    "early_stopping": lambda t: type(t.early_stopping_callback).__name__,
    "ckpt_path": lambda t: t.ckpt_path,
    "train batches": lambda t: len(t.train_dataloader),
    "val batches": lambda t: len(t.val_dataloaders),
    "test loaders": lambda t: t.test_dataloaders,
    "epochs done": lambda t: t.fit_loop.epoch_progress.current.completed,
    "max_epochs": lambda t: t.fit_loop.max_epochs,
}


class Reads(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[dict] = []

    def on_validation_epoch_end(self, trainer, pl_module):
        self.seen.append({name: read(trainer) for name, read in READS.items()})


def test_the_attributes_callbacks_read_are_those_of_a_trainer():
    def make():
        return [Reads(), callbacks.EarlyStopping(monitor="val_loss", patience=5)]

    lightning_run, hookline_run = both(make, epochs=2)
    theirs, ours = lightning_run.of(Reads).seen, hookline_run.of(Reads).seen
    assert ours == theirs
    assert ours[1]["epochs done"] == 1 and ours[0]["precision"] == "32-true"


def test_any_other_attribute_is_an_attribute_error_listing_what_the_facade_has():
    seen = {}

    class ReadsUnknown(pl.Callback):
        def on_train_start(self, trainer, pl_module):
            with pytest.raises(AttributeError) as info:
                trainer.accelerator  # noqa: B018
            seen["message"] = str(info.value)
            with pytest.raises(AttributeError, match="epoch_progress"):
                trainer.fit_loop.epoch_loop.batch_progress  # noqa: B018

    fit_hookline(lambda: [ReadsUnknown()], epochs=1)
    message = seen["message"]
    assert "trainer.accelerator" in message and "does not provide" in message
    for offered in ("current_epoch", "callback_metrics", "precision", "train_dataloader"):
        assert offered in message
    assert "before_train" not in message and "count_cut_epoch" not in message


def test_precision_follows_the_run_autocast_or_the_model_dtype(tmp_path):
    seen = []

    class Precision(pl.Callback):
        def on_train_start(self, trainer, pl_module):
            seen.append(trainer.precision)

    net = torch.nn.Linear(1, 1)
    Runner(net, optim_wrapper={"type": "AmpOptimWrapper", "dtype": "bfloat16",
                               "optimizer": {"type": "SGD", "lr": 0.01}},
           loss_fn=torch.nn.MSELoss(), train_dataloader=loader(), max_epochs=1,
           work_dir=tmp_path, default_hooks=QUIET, hooks=[Precision()]).train()
    assert seen == ["bf16-mixed"]
    assert lightning_precision(Runner(torch.nn.Linear(1, 1).double(),
                                      work_dir=tmp_path / "b")) == "64-true"


def test_ckpt_path_is_the_checkpoint_resumed_from(tmp_path):
    paths = []

    class CkptPath(pl.Callback):
        def on_train_start(self, trainer, pl_module):
            paths.append(trainer.ckpt_path)

    def run(work_dir, epochs, **kwargs):
        Runner(TinyRegressor(), train_dataloader=loader(), max_epochs=epochs, work_dir=work_dir,
               default_hooks={**QUIET, "checkpoint": {"type": "CheckpointHook", "interval": 1}},
               hooks=[CkptPath()], **kwargs).train()

    run(tmp_path / "a", 1)
    saved = tmp_path / "a" / "epoch_1.pth"
    run(tmp_path / "b", 2, resume=saved)
    run(tmp_path / "c", 1, load_from=saved)  # weights only: not a resume
    assert paths == [None, str(saved), None]


class Metrics(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def on_validation_epoch_end(self, trainer, pl_module):
        self.seen.append(("validation", sorted(trainer.callback_metrics)))

    def on_test_epoch_end(self, trainer, pl_module):
        self.seen.append(("test", sorted(trainer.callback_metrics)))


def _trainer(**kwargs) -> pl.Trainer:
    return pl.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, accelerator="cpu", num_sanity_val_steps=0,
                      default_root_dir=tempfile.mkdtemp(), **kwargs)


class LogsLoss(TinyRegressor):
    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        self.log("loss", loss)
        return loss


def test_callback_metrics_start_empty_at_every_run_as_in_lightning(tmp_path):
    theirs = Metrics()
    module = LogsLoss()
    trainer = _trainer(max_epochs=1, callbacks=[theirs])
    trainer.fit(module, loader(), loader())
    trainer.validate(module, loader(), verbose=False)
    trainer.test(module, loader(), verbose=False)

    ours = Metrics()
    runner = Runner(LogsLoss(), train_dataloader=loader(), val_dataloader=loader(),
                    test_dataloader=loader(), max_epochs=1, work_dir=tmp_path,
                    default_hooks=QUIET, hooks=[ours])
    runner.train()
    runner.val()
    runner.test()
    assert ours.seen == theirs.seen
    assert ours.seen[-1] == ("test", ["test_loss"])


class StopAt(pl.Callback):
    """Sets ``should_stop`` at a point of epoch 1; records the epoch counters at each end."""

    def __init__(self, where: str) -> None:
        self.where, self.seen, self.batches = where, [], 0

    def on_train_epoch_start(self, trainer, pl_module):
        if self.where == "epoch_start" and trainer.current_epoch == 1:
            trainer.should_stop = True

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batches += 1
        if self.where == "batch" and trainer.current_epoch == 1 and batch_idx == 0:
            trainer.should_stop = True

    def on_train_epoch_end(self, trainer, pl_module):
        self.seen.append(("epoch_end", trainer.current_epoch))

    def on_train_end(self, trainer, pl_module):
        self.seen.append(("train_end", trainer.current_epoch))


def test_after_a_stop_inside_an_epoch_on_train_end_counts_it_as_lightning_does():
    lightning_run, hookline_run = both(lambda: [StopAt("batch")], epochs=4)
    theirs, ours = lightning_run.of(StopAt), hookline_run.of(StopAt)
    assert ours.seen == theirs.seen == [("epoch_end", 0), ("epoch_end", 1), ("train_end", 2)]
    assert ours.batches == theirs.batches == 4
    assert hookline_run.runner.epoch == 1  # the Runner itself counts finished epochs only


def test_a_stop_at_an_epoch_start_trains_no_batch_of_it_as_in_lightning():
    lightning_run, hookline_run = both(lambda: [StopAt("epoch_start")], epochs=4)
    theirs, ours = lightning_run.of(StopAt), hookline_run.of(StopAt)
    assert ours.seen == theirs.seen == [("epoch_end", 0), ("epoch_end", 1), ("train_end", 2)]
    assert ours.batches == theirs.batches == 3


class Outputs(pl.Callback):
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx,
                                dataloader_idx=0):
        self.seen.append(("validation", outputs))

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx,
                          dataloader_idx=0):
        self.seen.append(("test", outputs))


def test_a_step_that_returns_nothing_gives_the_callbacks_none_as_in_lightning(tmp_path):
    theirs = Outputs()
    trainer = _trainer(max_epochs=1, callbacks=[theirs])
    trainer.validate(TinyRegressor(), loader(), verbose=False)
    trainer.test(TinyRegressor(), loader(), verbose=False)
    ours = Outputs()
    runner = Runner(TinyRegressor(), val_dataloader=loader(), test_dataloader=loader(),
                    work_dir=tmp_path, default_hooks=QUIET, hooks=[ours])
    runner.val()
    runner.test()
    assert ours.seen == theirs.seen == [("validation", None)] * 2 + [("test", None)] * 2
    plain = Outputs()  # a torch model: the Runner's step outputs, as before
    fit_hookline(lambda: [plain], epochs=1)
    assert sorted(plain.seen[0][1]) == ["loss", "preds", "targets"]


class Order(pl.Callback):
    def __init__(self, name: str, seen: list[str]) -> None:
        self.name, self.seen = name, seen

    def on_train_epoch_start(self, trainer, pl_module):
        self.seen.append(self.name)

    def on_train_end(self, trainer, pl_module):
        self.seen.append(self.name)


def test_priority_orders_lightning_callbacks_among_themselves(tmp_path):
    seen: list[str] = []
    runner = Runner(TinyRegressor(), train_dataloader=loader(), max_epochs=1,
                    work_dir=tmp_path, default_hooks=QUIET,
                    hooks=[Order("a", seen), Order("b", seen)])
    runner.register_hook(Order("first", seen), priority="VERY_HIGH")
    runner.register_hook(Order("last", seen), priority="LOW")
    runner.train()
    assert seen == ["first", "a", "b", "last"] * 2


class StopAndWatchValidation(StopAt):
    """StopAt("batch"), recording every validation and its metrics' keys."""

    def __init__(self) -> None:
        super().__init__("batch")

    def on_validation_epoch_end(self, trainer, pl_module):
        self.seen.append(("validation", trainer.current_epoch, trainer.global_step,
                          sorted(k for k in trainer.callback_metrics if k.startswith("val_"))))


def test_an_epoch_cut_by_should_stop_is_validated_first_as_in_lightning():
    lightning_run, hookline_run = both(lambda: [StopAndWatchValidation()], epochs=4)
    theirs = lightning_run.of(StopAndWatchValidation)
    ours = hookline_run.of(StopAndWatchValidation)
    assert [entry[:3] for entry in theirs.seen] == [
        ("validation", 0, 3, ), ("epoch_end", 0), ("validation", 1, 4), ("epoch_end", 1),
        ("train_end", 2)]
    assert [entry[:3] for entry in ours.seen] == [entry[:3] for entry in theirs.seen]
    assert ours.seen[2][3] == ["val_accuracy", "val_loss"]
    # logged as that epoch's validation: one val record per validation, the cut one as epoch 2
    assert hookline_run.runner.val_loop.ran_at_iter == 4
