"""A real ``LightningModule``'s own hook methods in a hookline Runner: called where
``lightning.Trainer`` calls them (the order of a 2-epoch fit, a validate and a test compared with
a real Trainer's), with what they ``self.log`` reported in the right epoch (``save_best`` sees a
metric computed in ``on_validation_epoch_end``), checkpoint keys that survive an exact resume,
and no call at all for the methods a module does not override."""

from __future__ import annotations

import itertools
import json
import tempfile
import warnings

import pytest
import torch
import torch.nn.functional as F

from hookline import Hook, Runner
from hookline.core import ConfigError
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

pl = pytest.importorskip("lightning.pytorch")

from hookline.integrations.lightning_module import LightningModuleHook  # noqa: E402
from hookline.integrations.lightning_module_hooks import HOOK_METHODS  # noqa: E402

from .lightning_toy import TinyRegressor, loader  # noqa: E402

QUIET = {"logger": None, "progress": None, "checkpoint": None}
VAL_SCORES = (0.2, 0.9, 0.5)  # what on_validation_epoch_end computes in epochs 1, 2, 3


class Recorder(TinyRegressor):
    """Overrides every hook method a run calls (set on the class below), recording each call
    with ``current_epoch``, ``global_step`` and its int / str arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []


def _recording(name: str):
    base = getattr(pl.LightningModule, name)

    def method(self, *args, **kwargs):
        args += tuple(kwargs.values())  # Lightning passes setup(stage=...) by keyword
        self.calls.append((name, self.current_epoch, self.global_step,
                           *(a for a in args if isinstance(a, (int, str)))))
        return base(self, *args)
    return method


for _name in HOOK_METHODS:
    setattr(Recorder, _name, _recording(_name))


def lightning_trainer() -> pl.Trainer:
    return pl.Trainer(max_epochs=2, logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, accelerator="cpu",
                      num_sanity_val_steps=0, default_root_dir=tempfile.mkdtemp())


def without(calls: list[tuple], *names: str) -> list[tuple]:
    return [c for c in calls if c[0] not in names]


def test_the_call_order_of_a_fit_a_validate_and_a_test_is_lightnings(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's hints about workers and logging
        theirs = Recorder()
        trainer = lightning_trainer()
        trainer.fit(theirs, loader(), loader())
        fit_theirs = list(theirs.calls)
        evaluated = {}
        for fn in ("validate", "test"):
            module = Recorder()
            getattr(lightning_trainer(), fn)(module, loader(), verbose=False)
            evaluated[fn] = [c[0] for c in module.calls]

    ours = Recorder()
    runner = Runner(ours, train_dataloader=loader(), val_dataloader=loader(), max_epochs=2,
                    work_dir=tmp_path, default_hooks=QUIET)
    runner.train()
    # configure_model: once, when the Runner is built (before configure_optimizers); Lightning
    # calls it after setup
    assert ours.calls[0] == ("configure_model", 0, 0)
    assert [c[0] for c in fit_theirs[:3]] == ["prepare_data", "setup", "configure_model"]
    # on_before_zero_grad: hookline zeroes after the step, Lightning before the backward
    zero = [i for i, c in enumerate(ours.calls) if c[0] == "on_before_zero_grad"]
    assert len(zero) == 4 == sum(c[0] == "on_before_zero_grad" for c in fit_theirs)
    assert all(ours.calls[i - 1][0] == "on_before_optimizer_step" for i in zero)
    # everything else: the same calls, in the same order, with the same epoch, step and args
    expected = without(fit_theirs, "configure_model", "on_before_zero_grad")
    got = without(ours.calls, "configure_model", "on_before_zero_grad")
    assert got == expected, "\n".join(f"{a!s:60} {b}" for a, b in itertools.zip_longest(got, expected))
    assert ("on_train_batch_end", 0, 1, 0) in got and ("on_train_epoch_end", 1, 4) in got
    assert got[-1] == ("teardown", 2, 4, "fit")

    for fn in ("validate", "test"):
        module = Recorder()
        loaders = {"val_dataloader": loader()} if fn == "validate" else {"test_dataloader": loader()}
        runner = Runner(module, work_dir=tmp_path / fn, default_hooks=QUIET, **loaders)
        runner.val() if fn == "validate" else runner.test()
        names = [c[0] for c in module.calls]
        assert names[0] == "configure_model"
        assert names[1:] == without_names(evaluated[fn], "configure_model")


def without_names(names: list[str], *dropped: str) -> list[str]:
    return [n for n in names if n not in dropped]


class Classic(pl.LightningModule):
    """The patterns of Lightning's docs: outputs collected in ``validation_step`` become a
    metric in ``on_validation_epoch_end``; losses collected in ``training_step`` an epoch mean
    in ``on_train_epoch_end``; checkpoint keys of the module's own."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(1, 1)
        self.validation_step_outputs: list[torch.Tensor] = []
        self.training_step_outputs: list[torch.Tensor] = []
        self.collected: list[int] = []  # how many outputs each validation epoch collected
        self.epoch_means: list[float] = []
        self.batches_seen = 0  # kept in checkpoints by on_save / on_load_checkpoint
        self.loaded: list[int] = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.layer(x), y)
        self.training_step_outputs.append(loss.detach())
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.batches_seen += 1

    def on_train_epoch_end(self):
        mean = torch.stack(self.training_step_outputs).mean()
        self.log("train_epoch_loss", mean)
        self.epoch_means.append(float(mean))
        self.training_step_outputs.clear()

    def validation_step(self, batch, batch_idx):
        self.validation_step_outputs.append(torch.tensor(VAL_SCORES[self.current_epoch % 3]))

    def on_validation_epoch_end(self):
        self.collected.append(len(self.validation_step_outputs))
        self.log("val_acc", torch.stack(self.validation_step_outputs).mean())
        self.validation_step_outputs.clear()

    def on_save_checkpoint(self, checkpoint):
        checkpoint["batches_seen"] = self.batches_seen

    def on_load_checkpoint(self, checkpoint):
        self.batches_seen = checkpoint["batches_seen"]
        self.loaded.append(checkpoint["batches_seen"])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_a_metric_computed_in_on_validation_epoch_end_is_that_epochs_and_save_best_uses_it(
        tmp_path):
    model = Classic()
    hooks = {**QUIET, "logger": {"type": "LoggerHook", "interval": 1},
             "checkpoint": {"type": "CheckpointHook", "interval": 100, "save_best": "val_acc"}}
    runner = Runner(model, train_dataloader=loader(), val_dataloader=loader(), max_epochs=3,
                    work_dir=tmp_path, default_hooks=hooks)
    seen = []

    class Reader(Hook):
        def after_val_epoch(self, runner, metrics=None):  # a NORMAL hook: after the module's
            seen.append(metrics["val_acc"])

    runner.register_hook(Reader())
    runner.train()
    assert seen == pytest.approx(VAL_SCORES)
    assert model.collected == [2, 2, 2]  # filled by validation_step, cleared every epoch
    assert (tmp_path / "best_val_acc_epoch_2.pth").exists()
    assert not (tmp_path / "best_val_acc_epoch_3.pth").exists()
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["val_acc"] for r in lines if r["mode"] == "val"] == pytest.approx(VAL_SCORES)
    # on_train_epoch_end: the mean of the epoch's two losses, logged once per epoch
    assert len(model.epoch_means) == 3 and model.training_step_outputs == []
    assert runner.message_hub.latest("train/train_epoch_loss") == pytest.approx(
        model.epoch_means[-1])


def test_keys_the_module_adds_to_a_checkpoint_survive_an_exact_resume(tmp_path):
    def run(module, max_epochs, work_dir, **kwargs):
        hooks = {**QUIET, "checkpoint": {"type": "CheckpointHook", "interval": 1}}
        runner = Runner(module, train_dataloader=loader(), val_dataloader=loader(),
                        max_epochs=max_epochs, work_dir=work_dir, default_hooks=hooks, **kwargs)
        runner.train()
        return module

    straight = run(Classic(), 4, tmp_path / "straight")
    first = run(Classic(), 2, tmp_path / "cut")
    saved = torch.load(tmp_path / "cut" / "epoch_2.pth", weights_only=True)
    assert saved["batches_seen"] == first.batches_seen == 4
    resumed = run(Classic(), 4, tmp_path / "resumed", resume=tmp_path / "cut" / "epoch_2.pth")
    assert resumed.loaded == [4]
    assert resumed.batches_seen == straight.batches_seen == 8
    assert resumed.epoch_means == pytest.approx(straight.epoch_means[2:])
    for a, b in zip(resumed.parameters(), straight.parameters()):
        assert torch.equal(a, b)  # exact resume


class Grads(pl.LightningModule):
    """The backward / optimizer hooks with their Lightning arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)
        self.seen: list[tuple] = []
        self.losses: list[float] = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.layer(x), y)
        self.losses.append(float(loss.detach()))
        return loss

    def on_before_backward(self, loss):
        self.seen.append(("before_backward", float(loss.detach()), self.layer.weight.grad is None))

    def on_after_backward(self):
        self.seen.append(("after_backward", self.layer.weight.grad is not None))

    def on_before_optimizer_step(self, optimizer):
        norm = torch.linalg.vector_norm(self.layer.weight.grad)
        self.log("weight_grad_norm", norm)  # the common use: log gradient norms
        self.seen.append(("before_step", optimizer is self.trainer.optimizers[0]))

    def on_before_zero_grad(self, optimizer):
        self.seen.append(("before_zero_grad", self.layer.weight.grad is not None))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_backward_and_optimizer_hooks_get_lightnings_arguments(tmp_path):
    model = Grads()
    runner = Runner(model, train_dataloader=loader(), max_epochs=1, work_dir=tmp_path,
                    default_hooks=QUIET)
    runner.train()
    assert model.seen == [
        ("before_backward", model.losses[0], True), ("after_backward", True),
        ("before_step", True), ("before_zero_grad", True),
        ("before_backward", model.losses[1], True), ("after_backward", True),
        ("before_step", True), ("before_zero_grad", True)]
    assert runner.message_hub.latest("train/weight_grad_norm") > 0
    wrapper = runner.optim_wrapper
    assert len(wrapper.before_backward) == len(wrapper.before_zero_grad) == 0  # released


class Plain(pl.LightningModule):
    """Overrides no hook method."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self.layer(x), y)

    def validation_step(self, batch, batch_idx):
        pass

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_a_module_that_overrides_nothing_gets_no_call(tmp_path, monkeypatch):
    counts = dict.fromkeys(HOOK_METHODS, 0)
    for name in HOOK_METHODS:  # Lightning's own no-ops, counting (Plain inherits these)
        monkeypatch.setattr(pl.LightningModule, name,
                            lambda self, *a, _n=name, **k: counts.__setitem__(_n, counts[_n] + 1))
    listeners = []

    class Watch(Hook):
        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            wrapper = runner.optim_wrapper
            listeners.append(len(wrapper.before_backward) + len(wrapper.after_backward)
                             + len(wrapper.before_step) + len(wrapper.before_zero_grad))

    runner = Runner(Plain(), train_dataloader=loader(), val_dataloader=loader(), max_epochs=2,
                    work_dir=tmp_path, default_hooks=QUIET, hooks=[Watch()])
    hook = next(h for h in runner.hooks.hooks if isinstance(h, LightningModuleHook))
    assert hook.calls.methods == frozenset()
    stages = hook.triggered_stages()
    assert "after_val_iter" not in stages and "before_save_checkpoint" not in stages
    runner.train()
    runner.save_checkpoint(tmp_path / "end.pth")
    assert counts == dict.fromkeys(HOOK_METHODS, 0)
    assert listeners == [0, 0, 0, 0]


class Moves(Plain):
    def on_after_batch_transfer(self, batch, dataloader_idx):
        return batch


def test_a_batch_transfer_hook_is_refused_when_the_runner_is_built(tmp_path):
    model = Moves()
    with pytest.raises(ConfigError, match=r"Moves.on_after_batch_transfer cannot run in a "
                                          r"hookline Runner.*collate_fn"):
        Runner(model, train_dataloader=loader(), max_epochs=1, work_dir=tmp_path,
               default_hooks=QUIET)
    assert "log" not in vars(model)  # nothing of a run was left bound to it


class Skips(Plain):
    def __init__(self) -> None:
        super().__init__()
        self.batches = 0

    def on_train_batch_start(self, batch, batch_idx):
        self.batches += 1
        return -1  # Lightning: skip the rest of the epoch

    def on_before_backward(self, loss):
        pass

    def on_validation_epoch_end(self):
        raise RuntimeError("metric failed")


def test_skip_requests_are_warned_about_and_a_failing_method_releases_the_module(tmp_path):
    model = Skips()
    runner = Runner(model, train_dataloader=loader(), val_dataloader=loader(), max_epochs=2,
                    work_dir=tmp_path, default_hooks=QUIET)
    with pytest.raises(Exception, match="metric failed"):
        runner.train()
    assert model.batches == 2  # the epoch went on
    log = (tmp_path / "log.txt").read_text()
    assert log.count("on_train_batch_start returned -1") == 1
    assert len(runner.optim_wrapper.before_backward) == 0 and "log" not in vars(model)
