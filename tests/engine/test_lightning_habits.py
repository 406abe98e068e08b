"""Lightning habits in the Runner: ``training_step(batch, batch_idx)``, ``configure_optimizers()``
in each of Lightning's return forms, schedulers per epoch or per step, exact resume, and a real
``LightningModule``; plus the warning for Lightning-named hook methods."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
import yaml
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Hook, Runner
from hookline.engine import OptimWrapper
from hookline.engine.configure_optimizers import EveryN
from hookline.engine.optim_wrapper_dict import OptimWrapperDict
from hookline.engine.registries import HOOKS
from hookline.engine.stage_lint import HookStageWarning

BATCHES = 4  # per epoch


def data(n: int = 4 * BATCHES) -> TensorDataset:
    generator = torch.Generator().manual_seed(7)
    return TensorDataset(torch.randn(n, 5, generator=generator),
                         torch.randint(0, 3, (n,), generator=generator))


class LitNet(torch.nn.Module):
    """A plain nn.Module written the Lightning way; ``optim`` says what configure_optimizers
    returns (a callable of the module)."""

    def __init__(self, optim=None) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(5, 3)
        self.optim = optim or (lambda m: torch.optim.SGD(m.parameters(), lr=0.1))
        self.seen: list[int] = []
        self.val_seen: list[int] = []

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        self.seen.append(batch_idx)
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        self.val_seen.append(batch_idx)  # and returns None (Lightning users call self.log)

    def configure_optimizers(self):
        return self.optim(self)


class LrLog(Hook):
    """The learning rate each training iteration ran with."""

    def __init__(self) -> None:
        self.lrs: list[float] = []

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self.lrs.append(runner.optimizer.param_groups[0]["lr"])


def runner_for(model, tmp_path, **kwargs) -> Runner:
    kwargs.setdefault("max_epochs", 2)
    return Runner(model, train_dataloader=DataLoader(data(), batch_size=4),
                  work_dir=tmp_path, default_hooks={"logger": None, "checkpoint": None},
                  **kwargs)


def test_a_lightning_style_module_trains_with_batch_idx_and_its_own_optimizer(tmp_path):
    model = LitNet()
    before = model.layer.weight.detach().clone()
    runner = runner_for(model, tmp_path, max_epochs=2,
                        val_dataloader=DataLoader(data(8), batch_size=4))
    assert isinstance(runner.optim_wrapper, OptimWrapper)
    assert runner.optimizer.param_groups[0]["params"][0] is model.layer.weight
    runner.train()
    assert model.seen == [0, 1, 2, 3] * 2  # the index in the epoch, as in Lightning
    assert model.val_seen == [0, 1] * 2
    assert runner.val_loop.last_metrics == {}  # validation_step returned None: no metrics
    assert not torch.equal(before, model.layer.weight)


def test_an_iteration_based_run_passes_the_position_in_the_current_pass(tmp_path):
    model = LitNet()
    runner_for(model, tmp_path, max_epochs=None, max_iters=6).train()
    assert model.seen == [0, 1, 2, 3, 0, 1]


def test_a_third_required_parameter_gets_dataloader_idx_0_and_one_argument_steps_still_work(
        tmp_path):
    calls = []

    class ThreeArgs(LitNet):
        def training_step(self, batch, batch_idx, dataloader_idx):
            calls.append((batch_idx, dataloader_idx))
            return F.cross_entropy(self(batch[0]), batch[1])

    class OneArg(LitNet):
        def training_step(self, batch, scale=1.0):  # a default: not Lightning's batch_idx
            calls.append(scale)
            return F.cross_entropy(self(batch[0]), batch[1]) * scale

    runner_for(ThreeArgs(), tmp_path / "a", max_epochs=1).train()
    assert calls == [(0, 0), (1, 0), (2, 0), (3, 0)]
    calls.clear()
    runner_for(OneArg(), tmp_path / "b", max_epochs=1).train()
    assert calls == [1.0] * BATCHES


def test_training_step_returning_none_skips_the_optimizer_step(tmp_path):
    class Skips(LitNet):
        def training_step(self, batch, batch_idx):
            if batch_idx % 2:
                return None
            return super().training_step(batch, batch_idx)

    model = Skips()
    runner = runner_for(model, tmp_path, max_epochs=2)
    steps: list[int] = []
    runner.optimizer.register_step_post_hook(lambda *args: steps.append(runner.iter))
    seen = []
    runner.on("after_train_iter", lambda r, batch_idx, data_batch=None, outputs=None:
              seen.append(sorted(outputs)))
    runner.train()
    assert steps == [0, 2, 4, 6]
    assert seen == [["loss"], []] * 4


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=1.0)


def step_lr(opt, gamma=0.5):
    return torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=gamma)


def _forms():
    """configure_optimizers results in each of Lightning's forms -> (scheduler count, by_epoch)."""
    def with_sched(build):
        def make(model):
            opt = sgd(model)
            return build(opt, step_lr(opt))
        return make
    return {
        "optimizer": (sgd, []),
        "list": (lambda m: [sgd(m)], []),
        "tuple": (lambda m: (sgd(m),), []),
        "dict": (lambda m: {"optimizer": sgd(m)}, []),
        "dict+scheduler": (with_sched(lambda o, s: {"optimizer": o, "lr_scheduler": s}), [True]),
        "dict+config": (with_sched(lambda o, s: {"optimizer": o, "lr_scheduler": {
            "scheduler": s, "interval": "step", "name": "lr"}}), [False]),
        "two lists": (with_sched(lambda o, s: ([o], [s])), [True]),
        "list, scheduler": (with_sched(lambda o, s: ([o], s)), [True]),
        "list of dicts": (with_sched(lambda o, s: [{"optimizer": o, "lr_scheduler": {
            "scheduler": s, "interval": "epoch"}}]), [True]),
    }


@pytest.mark.parametrize("form", list(_forms()))
def test_every_lightning_return_form_gives_the_optimizer_and_schedulers(tmp_path, form):
    build, by_epoch = _forms()[form]
    model = LitNet(build)
    runner = runner_for(model, tmp_path)
    assert type(runner.optimizer) is torch.optim.SGD
    assert [s.by_epoch for s in runner.param_schedulers] == by_epoch
    runner.train()
    assert runner.iter == 2 * BATCHES


@pytest.mark.parametrize(("interval", "frequency", "expected"), [
    ("epoch", 1, [1.0] * 4 + [0.5] * 4 + [0.25] * 4),
    ("step", 1, [0.5 ** i for i in range(12)]),
    ("step", 3, [0.5 ** (i // 3) for i in range(12)]),
    ("epoch", 2, [1.0] * 8 + [0.5] * 4),
])
def test_schedulers_step_per_epoch_by_default_or_per_step(tmp_path, interval, frequency,
                                                         expected):
    def optim(model):
        opt = sgd(model)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": step_lr(opt), "interval": interval,
                                                   "frequency": frequency}}
    log = LrLog()
    runner = runner_for(LitNet(optim), tmp_path, max_epochs=3, hooks=[log])
    runner.train()
    assert log.lrs == pytest.approx(expected)
    assert isinstance(runner.param_schedulers[0], EveryN) == (frequency > 1)


def test_reduce_lr_on_plateau_monitors_the_validation_metric_lightning_names_val_loss(tmp_path):
    class Plateau(LitNet):
        def validation_step(self, batch, batch_idx):
            return {"loss": torch.tensor(1.0)}  # never improves

    def optim(model):
        opt = sgd(model)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)
        return {"optimizer": opt, "lr_scheduler": plateau, "monitor": "val_loss"}

    runner = runner_for(Plateau(optim), tmp_path, max_epochs=3,
                        val_dataloader=DataLoader(data(8), batch_size=4))
    plateau = runner.param_schedulers[0]
    assert plateau.monitor == "val_loss"  # read as the metric "loss" once validation gave no val_loss
    runner.train()
    assert runner.optimizer.param_groups[0]["lr"] == pytest.approx(0.25)  # epochs 2 and 3


def test_resume_restores_the_optimizer_and_the_scheduler_exactly(tmp_path):
    def optim(model):
        opt = torch.optim.Adam(model.parameters(), lr=0.05)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": step_lr(opt, 0.7),
                                                   "interval": "step", "frequency": 3}}

    def make(work_dir, max_epochs, **kwargs):
        return Runner(LitNet(optim), train_dataloader=DataLoader(data(), batch_size=4,
                                                                 shuffle=True),
                      max_epochs=max_epochs, work_dir=work_dir, default_hooks={"logger": None},
                      **kwargs)

    reference = make(tmp_path / "ref", 3)
    reference.train()
    make(tmp_path / "run", 2).train()
    resumed = make(tmp_path / "run", 3, resume="auto")
    ran = []
    resumed.on("after_train_iter", lambda runner, **kwargs: ran.append(runner.iter))
    resumed.train()
    assert ran == [8, 9, 10, 11] and resumed.iter == reference.iter == 3 * BATCHES
    for a, b in zip(resumed.model.parameters(), reference.model.parameters()):
        assert torch.equal(a, b)
    assert resumed.param_schedulers[0].state_dict() == \
        reference.param_schedulers[0].state_dict()
    assert resumed.optimizer.param_groups[0]["lr"] == reference.optimizer.param_groups[0]["lr"]


@pytest.mark.parametrize(("result", "message"), [
    (lambda m: "sgd", "returned str 'sgd'; accepted: an optimizer"),
    (lambda m: None, "returned None: hookline trains with an optimizer"),
    (lambda m: {"opt": sgd(m)}, r"unknown key\(s\) \['opt'\]"),
    (lambda m: {"optimizer": "SGD"}, "'optimizer' is str"),
    (lambda m: [sgd(m), sgd(m)], "returned 2 optimizers.*manual optimization is not supported"),
    (lambda m: {"optimizer": sgd(m), "lr_scheduler": {"scheduler": step_lr(sgd(m))}},
     "schedules an optimizer that configure_optimizers\\(\\) did not return"),
    (lambda m: {"optimizer": (o := sgd(m)), "lr_scheduler": {"scheduler": step_lr(o),
                                                             "interval": "batch"}},
     "'interval' must be 'epoch' or 'step', got 'batch'"),
    (lambda m: {"optimizer": (o := sgd(m)), "lr_scheduler": {"scheduler": step_lr(o),
                                                             "every": 2}},
     r"unknown key\(s\) \['every'\]"),
    (lambda m: {"optimizer": (o := sgd(m)), "lr_scheduler": {
        "scheduler": torch.optim.lr_scheduler.ReduceLROnPlateau(o)}},
     "ReduceLROnPlateau needs a monitor"),
    (lambda m: {"optimizer": sgd(m), "lr_scheduler": "cosine"}, "got str 'cosine'"),
])
def test_wrong_configure_optimizers_results_are_config_errors_before_training(tmp_path, result,
                                                                             message):
    with pytest.raises(ConfigError, match=message):
        runner_for(LitNet(result), tmp_path)


def test_several_optimizers_go_to_a_model_that_updates_them_itself(tmp_path):
    class TwoOptimizers(LitNet):
        def configure_optimizers(self):
            return [torch.optim.SGD(self.parameters(), lr=0.1),
                    torch.optim.SGD(self.parameters(), lr=0.2)]

        def train_step(self, data, optim_wrapper):
            loss = F.cross_entropy(self(data[0]), data[1])
            optim_wrapper["1"].update_params(loss)
            return {"loss": loss.detach()}

    runner = runner_for(TwoOptimizers(), tmp_path, max_epochs=1)
    assert isinstance(runner.optim_wrapper, OptimWrapperDict)
    assert runner.optim_wrapper.get_lr() == {"0.lr": [0.1], "1.lr": [0.2]}
    runner.train()


def test_an_explicit_optimizer_wins_over_configure_optimizers(tmp_path):
    runner = runner_for(LitNet(lambda m: "never called"), tmp_path,
                        optimizer={"type": "Adam", "lr": 0.01})
    assert type(runner.optimizer) is torch.optim.Adam


# -- a real LightningModule ---------------------------------------------------------------------

def test_a_real_lightning_module_trains_in_the_runner(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")

    class Lit(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(5, 3)
            self.seen: list[int] = []

        def forward(self, x):
            return self.layer(x)

        def training_step(self, batch, batch_idx):
            self.seen.append(batch_idx)
            loss = F.cross_entropy(self(batch[0]), batch[1])
            self.log("train_loss", loss)  # recorded by the run (integrations.lightning_module)
            return {"loss": loss}

        def configure_optimizers(self):
            opt = torch.optim.SGD(self.parameters(), lr=1.0)
            return [opt], [{"scheduler": step_lr(opt), "interval": "epoch"}]

    log = LrLog()
    model = Lit()
    before = model.layer.weight.detach().clone()
    runner = runner_for(model, tmp_path, max_epochs=2, hooks=[log], loss_fn=F.cross_entropy,
                        val_dataloader=DataLoader(data(8), batch_size=4))
    runner.train()
    assert "train/train_loss" in runner.message_hub
    assert model.seen == [0, 1, 2, 3] * 2 and log.lrs == [1.0] * 4 + [0.5] * 4
    assert not torch.equal(before, model.layer.weight)
    # LightningModule's own validation_step stub is not the model's: loss_fn evaluates
    assert set(runner.val_loop.last_metrics) == {"loss"}


def test_a_lightning_module_without_training_step_or_loss_fn_is_a_config_error(tmp_path):
    pl = pytest.importorskip("lightning.pytorch")

    class Bare(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(5, 3)

    runner = runner_for(Bare(), tmp_path, optimizer={"type": "SGD", "lr": 0.1})
    with pytest.raises(ConfigError, match="Bare has no training_step"):
        runner.train()


# -- hook methods with Lightning's names ------------------------------------------------------------

@HOOKS.register(force=True)
class LightningNamedHook(Hook):
    def on_train_epoch_end(self, runner):
        pass


def test_lightning_named_hook_methods_warn_in_every_way_of_registering(tmp_path):
    class ViaArgument(Hook):
        def on_validation_epoch_end(self, runner):
            pass

    class ViaRegister(Hook):
        def on_train_batch_end(self, runner):
            pass

    with pytest.warns(HookStageWarning) as caught:
        runner = runner_for(LitNet(), tmp_path, hooks=[ViaArgument(), {"type":
                                                                      "LightningNamedHook"}])
        runner.register_hook(ViaRegister())
    messages = sorted(str(w.message) for w in caught)
    assert "LightningNamedHook.on_train_epoch_end" in messages[0] \
        and "'after_train_epoch'" in messages[0]
    assert "ViaArgument.on_validation_epoch_end" in messages[1] and "'after_val_epoch'" in messages[1]
    assert "ViaRegister.on_train_batch_end" in messages[2] and "'after_train_iter'" in messages[2]
    assert all(w.filename == __file__ for w in caught)  # points at the registering line


# -- from a config, through the command line ---------------------------------------------------------

PARTS = '''
import torch
import torch.nn.functional as F
from hookline.engine.registries import MODELS


@MODELS.register(force=True)
class LitDigits(torch.nn.Module):
    def __init__(self, lr=0.1):
        super().__init__()
        self.lr = lr
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        return F.cross_entropy(self(batch[0]), batch[1])

    def validation_step(self, batch, batch_idx):
        logits = self(batch[0])
        return {"loss": F.cross_entropy(logits, batch[1]), "preds": logits, "targets": batch[1]}

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.lr)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, 1, 0.5)}
'''


def test_hookline_train_runs_a_lightning_style_model_from_a_config(tmp_path):
    (tmp_path / "lit_parts.py").write_text(PARTS)
    cfg = {"custom_imports": ["lit_parts"], "model": {"type": "LitDigits"},
           "train_dataloader": {"dataset": {"type": "DigitsDataset", "split": "train"},
                                "batch_size": 512},
           "val_dataloader": {"dataset": {"type": "DigitsDataset", "split": "val"},
                              "batch_size": 181},
           "metrics": {"accuracy": "accuracy"}, "max_epochs": 2}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    result = subprocess.run([sys.executable, "-m", "hookline", "train", "cfg.yaml", "--work-dir",
                             str(tmp_path / "work")], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    log = next((tmp_path / "work").glob("*/log.txt")).read_text()
    assert "lr: 1.0000e-01" in log and "lr: 5.0000e-02" in log  # StepLR per epoch
    assert "Epoch(val) [2]" in log and "accuracy" in log

