"""A real ``lightning.pytorch.LightningModule`` in a hookline Runner: ``self.log`` / ``self.log_dict``
write into the run, ``self.trainer`` answers, and both are Lightning's own again after the run."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner
from hookline.core import ConfigError

pl = pytest.importorskip("lightning.pytorch")

from hookline.integrations.lightning_module import LightningModuleHook  # noqa: E402
from hookline.integrations.lightning_trainer import LightningTrainer  # noqa: E402

# x = 0..9 in batches of 4, 4, 2: batch means 1.5, 5.5, 8.5; weighted by batch size 4.5
# (the unweighted mean of the batch means would be 5.1667)
X = torch.arange(10, dtype=torch.float32).unsqueeze(1)
WEIGHTED_MEAN = 4.5
VAL_SCORES = (0.2, 0.9, 0.5)  # val_acc of epochs 1, 2, 3: the best is epoch 2


def loader() -> DataLoader:
    return DataLoader(TensorDataset(X, 2 * X), batch_size=4)


class LitRegressor(pl.LightningModule):
    def __init__(self, stop_at_step: int | None = None) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)
        self.stop_at_step = stop_at_step
        self.schedule_length: int | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y) * 1e-3
        self.log("train_loss", loss)
        self.log("x_mean", x.mean(), on_step=False, on_epoch=True)
        if self.stop_at_step is not None and self.global_step + 1 >= self.stop_at_step:
            self.trainer.should_stop = True
        return loss

    def validation_step(self, batch, batch_idx):
        x, _ = batch
        score = torch.tensor(VAL_SCORES[self.current_epoch])
        self.log("val_acc", score, prog_bar=True)
        self.log_dict({"val_x": x.mean(), "val_size": float(len(x))})
        self.log("val_max", x.max(), reduce_fx="max")

    def test_step(self, batch, batch_idx):
        x, _ = batch
        self.log("test_x", x.mean())
        self.log("test_batches", 1.0, reduce_fx="sum")

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.01)
        self.schedule_length = self.trainer.estimated_stepping_batches
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=0.05, total_steps=self.trainer.estimated_stepping_batches)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def make_runner(model: torch.nn.Module, tmp_path: Path, **kwargs) -> Runner:
    defaults = {"progress": None, "logger": {"type": "LoggerHook", "interval": 2},
                "checkpoint": {"type": "CheckpointHook", "interval": 100, "save_best": "val_acc"}}
    return Runner(model, train_dataloader=loader(), val_dataloader=loader(),
                  test_dataloader=loader(), max_epochs=3, work_dir=tmp_path,
                  default_hooks=defaults, **kwargs)


def records(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]


def test_logged_values_reach_the_log_the_metrics_and_save_best(tmp_path):
    model = LitRegressor()
    runner = make_runner(model, tmp_path)
    assert model.schedule_length == 9  # 3 epochs x 3 batches, read while the Runner was built
    runner.train()

    logged = records(tmp_path)
    val = [r for r in logged if r["mode"] == "val"]
    assert [r["val_acc"] for r in val] == pytest.approx(VAL_SCORES)
    assert all(r["val_x"] == pytest.approx(WEIGHTED_MEAN) for r in val)  # weighted by batch size
    assert all(r["val_size"] == pytest.approx((4 * 4 + 4 * 4 + 2 * 2) / 10) for r in val)
    assert all(r["val_max"] == 9.0 for r in val)
    train = [r for r in logged if r["mode"] == "train"]
    assert all("train_loss" in r for r in train)
    epoch_ends = [r for r in train if r["iter"] % 3 == 0]  # the last batch of each epoch
    assert [r["x_mean"] for r in epoch_ends] == pytest.approx([WEIGHTED_MEAN] * 3)
    assert all("x_mean" not in r for r in train if r["iter"] % 3)  # only once the epoch is done

    metrics = runner.message_hub.info["val_metrics"]
    assert metrics is runner.val_loop.last_metrics
    assert metrics["val_acc"] == pytest.approx(0.5)
    assert runner.message_hub.latest("val/val_x") == pytest.approx(WEIGHTED_MEAN)
    assert (tmp_path / "best_val_acc_epoch_2.pth").exists()  # save_best chose epoch 2
    assert not (tmp_path / "best_val_acc_epoch_3.pth").exists()
    trainer = LightningTrainer.of(runner)
    assert float(trainer.callback_metrics["val_acc"]) == pytest.approx(0.5)
    assert "val_val_acc" not in trainer.callback_metrics
    assert float(trainer.progress_bar_metrics["val_acc"]) == pytest.approx(0.5)

    # after the run: Lightning's own log, no trainer
    assert "log" not in vars(model)
    assert model.log.__func__ is pl.LightningModule.log
    with pytest.raises(RuntimeError, match="not attached"):
        model.trainer  # noqa: B018

    results = runner.test()
    assert results == pytest.approx({"test_x": WEIGHTED_MEAN, "test_batches": 3.0})
    assert "log" not in vars(model)


def test_trainer_attributes_and_should_stop(tmp_path):
    seen: dict = {}

    class Reader(Hook):
        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            trainer = runner.model.trainer
            seen.update(max_epochs=trainer.max_epochs, max_steps=trainer.max_steps,
                        min_epochs=trainer.min_epochs, fit_min=trainer.fit_loop.min_epochs,
                        batches=trainer.num_training_batches, zero=trainer.is_global_zero,
                        world=trainer.world_size, rank=trainer.global_rank,
                        optimizers=trainer.optimizers, epoch=trainer.current_epoch,
                        step=runner.model.global_step, logger=runner.model.logger is not None)

    model = LitRegressor(stop_at_step=4)
    runner = make_runner(model, tmp_path, hooks=[Reader()])
    runner.train()
    assert runner.iter == 4 and runner.epoch == 1  # stopped in the second epoch
    # after the 4th batch's step: global_step counts it (Lightning's, in on_train_batch_end)
    assert seen == {"max_epochs": 3, "max_steps": -1, "min_epochs": 0, "fit_min": 0, "batches": 3,
                    "zero": True, "world": 1, "rank": 0, "optimizers": [runner.optimizer],
                    "epoch": 1, "step": 4, "logger": True}


def test_a_lightning_callback_gets_the_module_itself(tmp_path):
    seen = []

    def on_validation_epoch_end(trainer, pl_module):
        seen.append((pl_module is model, float(trainer.callback_metrics["val_acc"])))
        pl_module.log("val_from_callback", 7.0)  # outside a batch: one epoch value

    model = LitRegressor()
    callback = pl.callbacks.LambdaCallback(on_validation_epoch_end=on_validation_epoch_end)
    runner = make_runner(model, tmp_path, hooks=[callback])
    runner.train()
    assert seen == [(True, pytest.approx(s)) for s in VAL_SCORES]
    assert runner.val_loop.last_metrics["val_from_callback"] == 7.0


class ReadBacks(TorchFunctionMode):
    """Counts host read-backs (``item``, ``tolist``, ``float()`` ...) made from hookline's
    Lightning integration files while a training iteration runs."""

    NAMES = frozenset({"item", "tolist", "__float__", "__bool__", "__int__", "__format__", "cpu"})

    def __init__(self) -> None:
        super().__init__()
        self.in_iteration = False
        self.calls: list[str] = []
        self.logger_calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if self.in_iteration and name in self.NAMES:
            frame = inspect.currentframe().f_back
            while frame is not None:
                file = frame.f_code.co_filename
                if file.endswith(("lightning_module.py", "lightning_log.py")):
                    self.calls.append(f"{name} at {Path(file).name}:{frame.f_lineno}")
                    break
                if file.endswith("logger.py"):
                    self.logger_calls += 1
                    break
                frame = frame.f_back
        return func(*args, **(kwargs or {}))


def test_no_read_back_per_iteration(tmp_path):
    recorder = ReadBacks()

    class Begin(Hook):
        priority = "HIGHEST"

        def before_train_iter(self, runner, batch_idx, data_batch=None):
            recorder.in_iteration = True

    class End(Hook):
        priority = "LOWEST"

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            recorder.in_iteration = False

    runner = make_runner(LitRegressor(), tmp_path, hooks=[Begin(), End()])
    logger = next(hook for hook in runner.hooks.hooks if type(hook).__name__ == "LoggerHook")
    logger.background = False  # its log-step reads on this thread, for the check below
    with recorder:
        runner.train()
    assert recorder.logger_calls > 0  # the recorder sees read-backs: LoggerHook's, at log steps
    assert recorder.calls == []


def test_bad_log_calls_are_config_errors_and_the_module_is_released(tmp_path):
    class BadReduce(LitRegressor):
        def training_step(self, batch, batch_idx):
            self.log("x", batch[0].mean(), reduce_fx="median")

    model = BadReduce()
    runner = make_runner(model, tmp_path)
    with pytest.raises(ConfigError, match="reduce_fx='median'.*'mean'"):
        runner.train()
    assert "log" not in vars(model)

    class NotScalar(LitRegressor):
        def validation_step(self, batch, batch_idx):
            self.log("val_x", batch[0])

    with pytest.raises(ConfigError, match=r"needs one number.*shape \(4, 1\)"):
        make_runner(NotScalar(), tmp_path / "b").val()


def test_a_plain_module_gets_no_lightning_hooks(tmp_path):
    class Plain(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.mse_loss(self.layer(x), y)

    runner = Runner(Plain(), optimizer={"type": "SGD", "lr": 0.001}, train_dataloader=loader(),
                    max_epochs=1, work_dir=tmp_path, default_hooks={"progress": None})
    assert not any(isinstance(h, (LightningModuleHook, LightningTrainer))
                   for h in runner.hooks.hooks)
    runner.train()
    assert runner.iter == 3


class LogsItsLearningRate(LitRegressor):
    """Reads its optimizer and scheduler the Lightning way, as modules logging the LR do."""

    def on_train_epoch_end(self):
        optimizer, scheduler = self.optimizers(), self.lr_schedulers()
        self.log("lr_read", optimizer.param_groups[0]["lr"])
        self.seen = (optimizer, scheduler)


def test_optimizers_and_lr_schedulers_give_the_runs_own(tmp_path):
    module = LogsItsLearningRate()
    runner = make_runner(module, tmp_path)
    runner.train()
    optimizer, scheduler = module.seen
    assert optimizer is runner.optimizer  # the torch optimizer itself, as hookline steps it
    assert scheduler is runner.param_schedulers[0]
    assert float(runner.message_hub.latest("train/lr_read")) == pytest.approx(
        optimizer.param_groups[0]["lr"])
