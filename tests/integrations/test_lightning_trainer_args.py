"""A ``LightningModule`` next to real ``lightning.Trainer.fit``: what Lightning's Trainer arguments
become in a Runner (``optim_wrapper=`` without ``"optimizer"`` around ``configure_optimizers()``),
a ReduceLROnPlateau on a ``self.log``-ged monitor, ``trainer.logged_metrics``,
``trainer.is_last_batch``, manual optimization refused, and Lightning's argument names and
data modules answered with the hookline way."""

from __future__ import annotations

import tempfile

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner

from ._lightning_twins import one_thread  # noqa: F401  (autouse: one torch thread, quiet)

pl = pytest.importorskip("lightning.pytorch")

GEN = torch.Generator().manual_seed(123)
X, Y = torch.randn(40, 4, generator=GEN), torch.randint(0, 2, (40,), generator=GEN)
VX, VY = torch.randn(24, 4, generator=GEN), torch.randint(0, 2, (24,), generator=GEN)
QUIET = {"logger": None, "progress": None, "checkpoint": None}


def train_loader(batch_size: int = 8) -> DataLoader:
    return DataLoader(TensorDataset(X, Y), batch_size=batch_size)


def val_loader() -> DataLoader:
    return DataLoader(TensorDataset(VX, VY), batch_size=10)  # 10, 10, 4


def lightning_fit(module, epochs: int = 2, val: bool = False, **trainer_args):
    trainer = pl.Trainer(max_epochs=epochs, accelerator="cpu", devices=1, logger=False,
                         enable_checkpointing=False, num_sanity_val_steps=0,
                         enable_progress_bar=False, enable_model_summary=False,
                         default_root_dir=tempfile.mkdtemp(), **trainer_args)
    trainer.fit(module, train_loader(), val_loader() if val else None)
    return trainer


def hookline_fit(module, tmp_path, epochs: int = 2, val: bool = False, **runner_args) -> Runner:
    runner = Runner(module, train_dataloader=train_loader(),
                    val_dataloader=val_loader() if val else None, max_epochs=epochs,
                    work_dir=tmp_path, default_hooks=QUIET, **runner_args)
    runner.train()
    return runner


def twins(cls, *args):
    torch.manual_seed(0)
    first = cls(*args)
    torch.manual_seed(0)
    return first, cls(*args)


def max_difference(a: torch.nn.Module, b: torch.nn.Module) -> float:
    return max(float((p - q).abs().max()) for p, q in zip(a.state_dict().values(),
                                                         b.state_dict().values()))


def trainer_of(runner: Runner):
    from hookline.integrations.lightning_trainer import LightningTrainer  # noqa: PLC0415
    return LightningTrainer.of(runner)


class Stepped(pl.LightningModule):
    """configure_optimizers() with a per-epoch StepLR; records the gradient norm of each step."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                         torch.nn.Linear(8, 2))
        self.norms: list[float] = []

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y) * 5

    def on_before_optimizer_step(self, optimizer):
        grads = [p.grad.norm() for p in self.parameters()]
        self.norms.append(float(torch.linalg.vector_norm(torch.stack(grads))))

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, 1, 0.5)}


@pytest.mark.parametrize(("trainer_args", "optim_wrapper"), [
    ({"gradient_clip_val": 0.5}, {"clip_grad": {"max_norm": 0.5}}),
    ({"accumulate_grad_batches": 2}, {"accumulative_counts": 2}),
    ({"precision": "bf16-mixed"}, {"type": "AmpOptimWrapper", "dtype": "bfloat16"}),
])
def test_an_optim_wrapper_without_optimizer_wraps_configure_optimizers_as_the_trainer_args(
        tmp_path, trainer_args, optim_wrapper):
    lit, ours = twins(Stepped)
    trainer = lightning_fit(lit, **trainer_args)
    runner = hookline_fit(ours, tmp_path, optim_wrapper=optim_wrapper)
    assert runner.optimizer is not None and len(runner.param_schedulers) == 1  # its StepLR kept
    assert runner.optimizer.param_groups[0]["lr"] == \
        trainer.optimizers[0].param_groups[0]["lr"] == 0.025
    if "accumulate_grad_batches" in trainer_args:
        # 5 batches an epoch: Lightning divides the leftover group's loss by 2, hookline by its
        # size 1 (docs/bridges.md): the full groups agree
        assert len(ours.norms) == len(lit.norms) == 6
        assert ours.norms[:2] == pytest.approx(lit.norms[:2], abs=1e-5)
        assert ours.norms[2] == pytest.approx(2 * lit.norms[2], abs=1e-5)
        return
    assert ours.norms == pytest.approx(lit.norms, abs=1e-5)
    assert max_difference(lit, ours) < 1e-6


def test_a_full_optim_wrapper_wins_over_configure_optimizers_with_a_warning(tmp_path, capsys):
    _, ours = twins(Stepped)
    runner = hookline_fit(ours, tmp_path, epochs=1,
                          optim_wrapper={"optimizer": {"type": "SGD", "lr": 0.3}})
    assert runner.param_schedulers == []
    assert "WARNING - Stepped.configure_optimizers() is not used" in capsys.readouterr().out


def test_an_optim_wrapper_without_optimizer_needs_configure_optimizers(tmp_path):
    with pytest.raises(ConfigError, match=r"configure_optimizers\(\) gives it, and Linear has none"):
        Runner(torch.nn.Linear(4, 2), train_dataloader=train_loader(), max_epochs=1,
               loss_fn=torch.nn.CrossEntropyLoss(), work_dir=tmp_path / "run",
               default_hooks=QUIET, optim_wrapper={"clip_grad": {"max_norm": 1.0}})
    assert not (tmp_path / "run").exists()  # refused before anything is written


class Plateau(pl.LightningModule):
    """ReduceLROnPlateau on a self.log-ged validation value (nested or top-level monitor)."""

    def __init__(self, nested: bool) -> None:
        super().__init__()
        self.nested = nested
        self.layer = torch.nn.Linear(4, 2)
        self.lrs: list[float] = []

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        self.lrs.append(self.trainer.optimizers[0].param_groups[0]["lr"])
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))
        self.log("val_acc", (self(x).argmax(1) == y).float().mean())

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=1.0)
        if self.nested:
            plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", patience=0,
                                                                 factor=0.5)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": plateau, "monitor": "val_acc"}}
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)
        return {"optimizer": opt, "lr_scheduler": plateau, "monitor": "val_loss"}


@pytest.mark.parametrize("nested", [True, False])
def test_a_plateau_monitors_a_logged_val_name_as_lightning(tmp_path, nested):
    lit, ours = twins(Plateau, nested)
    lightning_fit(lit, epochs=6, val=True)
    hookline_fit(ours, tmp_path, epochs=6, val=True)
    assert ours.lrs == lit.lrs and len(set(lit.lrs)) > 1  # it did reduce
    assert max_difference(lit, ours) < 1e-6


def test_a_val_prefixed_monitor_still_reads_the_runners_own_metric(tmp_path):
    from hookline.hooks.param_scheduler import monitored_value  # noqa: PLC0415
    runner = hookline_fit(Stepped(), tmp_path, epochs=1)
    assert monitored_value(runner, "val_loss", {"loss": 0.5}) == 0.5
    assert monitored_value(runner, "val/loss", {"loss": 0.5, "val/loss": 0.25}) == 0.25
    assert monitored_value(runner, "val_acc", {"loss": 0.5}) is None


class Logs(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 2)
        self.last: list[tuple[int, bool]] = []

    def forward(self, x):
        return self.layer(x)

    def on_train_batch_start(self, batch, batch_idx):
        self.last.append((batch_idx, self.trainer.is_last_batch))

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.last.append((batch_idx, self.trainer.is_last_batch))

    def on_validation_epoch_start(self):
        self.last.append((-1, self.trainer.is_last_batch))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("a", loss)
        self.log("b", loss, on_step=False, on_epoch=True)
        self.log("c", loss, on_step=True, on_epoch=True, prog_bar=True)
        self.log("hidden", loss, logger=False)
        self.log_dict({"d": loss * 2, "e": float(batch_idx)}, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))
        self.log("val_stepped", float(batch_idx), on_step=True, on_epoch=True)
        self.log("val_hidden", float(batch_idx), logger=False)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_logged_metrics_and_is_last_batch_are_lightnings(tmp_path):
    lit, ours = twins(Logs)
    trainer = lightning_fit(lit, val=True)
    runner = hookline_fit(ours, tmp_path, val=True)
    expected = {k: float(v) for k, v in trainer.logged_metrics.items()}
    got = {k: float(v) for k, v in trainer_of(runner).logged_metrics.items()}
    assert "c_step" in expected and "hidden" not in expected
    assert got == pytest.approx(expected, abs=1e-6)
    assert ours.last == lit.last and (4, True) in lit.last and (-1, True) in lit.last


class Manual(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(4, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        loss = F.cross_entropy(self.layer(x), y)
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class OwnUpdate(Manual):
    """The alternative the error names: MMEngine's train_step(data, optim_wrapper)."""

    def train_step(self, data, optim_wrapper):
        x, y = data
        loss = F.cross_entropy(self.layer(x), y)
        self.log("own_loss", loss)
        optim_wrapper.update_params(loss)
        return {"loss": loss}


def test_manual_optimization_is_refused_and_its_alternative_trains_as_lightning(tmp_path):
    model = Manual()
    with pytest.raises(ConfigError, match=r"Manual.automatic_optimization is False .* "
                                          r"train_step\(self, data, optim_wrapper\)"):
        Runner(model, train_dataloader=train_loader(), max_epochs=1, work_dir=tmp_path,
               default_hooks=QUIET)
    assert "log" not in vars(model)  # nothing of a run was left bound to it
    lit, ours = twins(Manual)
    torch.manual_seed(0)
    ours = OwnUpdate()
    lightning_fit(lit)
    runner = hookline_fit(ours, tmp_path / "own")
    assert max_difference(lit, ours) < 1e-6
    assert "own_loss" in trainer_of(runner).logged_metrics


class DataModule(pl.LightningDataModule):
    def train_dataloader(self):
        return train_loader()


@pytest.mark.parametrize(("arguments", "message"), [
    ({"train_dataloader": DataModule()}, r"LightningDataModule \(DataModule\).*dm.setup\('fit'\)"),
    ({"datamodule": DataModule()}, r"'datamodule': pass its loaders.*dm.train_dataloader\(\)"),
    ({"val_dataloader": [val_loader(), val_loader()]}, "takes one val_dataloader"),
    ({"val_dataloader": {"a": val_loader(), "b": val_loader()}}, "takes one val_dataloader"),
    ({"gradient_clip_val": 0.5}, r"pass optim_wrapper=\{'clip_grad'"),
    ({"gradient_clip_algorithm": "value"}, "'clip_value'"),
    ({"accumulate_grad_batches": 2}, "'accumulative_counts': n"),
    ({"precision": "bf16-mixed"}, "AmpOptimWrapper"),
    ({"check_val_every_n_epoch": 2}, "pass val_interval=n"),
    ({"val_check_interval": 0.5}, "val_interval=n with max_iters="),
    ({"limit_train_batches": 3}, "Subset"),
    ({"limit_val_batches": 3}, "shorter val_dataloader"),
    ({"deterministic": True}, "use_deterministic_algorithms"),
    ({"devices": 1}, "torchrun"),
    ({"accelerator": "cpu"}, "device="),
    ({"strategy": "ddp"}, "DistributedDataParallel"),
    ({"num_sanity_val_steps": 0}, "no sanity check"),
    ({"enable_checkpointing": False}, r"\{'checkpoint': None\}"),
    ({"logger": False}, r"\{'logger'"),
])
def test_lightning_trainer_arguments_and_data_modules_name_the_hookline_way(tmp_path, arguments,
                                                                          message):
    arguments = {"train_dataloader": train_loader(), **arguments}
    with pytest.raises(ConfigError, match=message):
        Runner(Stepped(), max_epochs=1, work_dir=tmp_path, default_hooks=QUIET, **arguments)
    assert not any(tmp_path.iterdir())  # refused before anything was written


class StepCounter(pl.LightningModule):
    """Records trainer.global_step at every on_train_batch_end."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(4, 2)
        self.seen: list[int] = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.layer(x), y)

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.seen.append(self.trainer.global_step)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_global_step_counts_optimizer_steps_under_accumulation_as_lightning(tmp_path):
    theirs, ours = StepCounter(), StepCounter()
    lightning_fit(theirs, accumulate_grad_batches=2)  # 5 batches an epoch: 3 steps each
    hookline_fit(ours, tmp_path, optim_wrapper={"accumulative_counts": 2})
    assert ours.seen == theirs.seen == [0, 1, 1, 2, 3, 3, 4, 4, 5, 6]
