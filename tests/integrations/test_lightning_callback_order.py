"""Lightning callbacks and a ``LightningModule``'s own methods in one hookline run: the same calls,
in the same order, with the same ``global_step`` and ``batch_idx`` as in a real
``lightning.Trainer.fit`` (callbacks before the module at each point, ``EarlyStopping`` after
the module at ``on_train_epoch_end``); the optimizer hooks come from the optimizer wrapper's
events, with unscaled gradients under a loss scaler, and are released after the run, also when
it fails."""

from __future__ import annotations

import itertools
import tempfile
import warnings

import pytest
import torch

from hookline import Runner
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

pl = pytest.importorskip("lightning.pytorch")

from lightning.pytorch.callbacks import EarlyStopping  # noqa: E402

from hookline.integrations.lightning_module_hooks import HOOK_METHODS  # noqa: E402
from hookline.integrations.lightning_runner import CALLBACK_METHODS  # noqa: E402

from .lightning_toy import TinyRegressor, loader  # noqa: E402

QUIET = {"logger": None, "progress": None, "checkpoint": None}
#: called differently by design (docs/bridges.md): configure_model once when the Runner is
#: built; on_before_zero_grad right after the step (Lightning: before the next backward)
DIFFERENT = {"configure_model", "on_before_zero_grad"}


def _ints(args: tuple) -> tuple:
    return tuple(a for a in args if isinstance(a, (int, str)) and not isinstance(a, bool))


class Module(TinyRegressor):
    """Records each of its hook methods as ``("module", name, global_step, *int/str args)``."""

    def __init__(self, log: list) -> None:
        super().__init__()
        self.record = log


class Callback(pl.Callback):
    """Records each Lightning callback method as ``("callback", name, global_step, ...)``."""

    def __init__(self, log: list) -> None:
        self.record = log


class Monitor(EarlyStopping):
    """Lightning's EarlyStopping (a "monitoring" callback), recording its epoch ends."""

    def __init__(self, log: list) -> None:
        super().__init__(monitor="val_loss", patience=100)
        self.record = log

    def on_train_epoch_end(self, trainer, pl_module):
        self.record.append(("monitor", "on_train_epoch_end", trainer.global_step))
        super().on_train_epoch_end(trainer, pl_module)


def _module_method(name: str):
    base = getattr(pl.LightningModule, name)

    def method(self, *args, **kwargs):
        args += tuple(kwargs.values())  # setup(stage=...) by keyword
        self.record.append(("module", name, self.global_step, *_ints(args)))
        return base(self, *args)
    return method


def _callback_method(name: str):
    def method(self, trainer, pl_module, *args, **kwargs):
        args += tuple(kwargs.values())
        self.record.append(("callback", name, trainer.global_step, *_ints(args)))
    return method


for _name in HOOK_METHODS:
    setattr(Module, _name, _module_method(_name))
for _name in CALLBACK_METHODS:
    setattr(Callback, _name, _callback_method(_name))


def run_lightning() -> list[tuple]:
    log: list[tuple] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's hints about workers and logging
        trainer = pl.Trainer(max_epochs=2, logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False,
                             accelerator="cpu", num_sanity_val_steps=0,
                             default_root_dir=tempfile.mkdtemp(),
                             callbacks=[Monitor(log), Callback(log)])
        trainer.fit(Module(log), loader(), loader())
    return log


def run_hookline(tmp_path) -> list[tuple]:
    log: list[tuple] = []
    runner = Runner(Module(log), train_dataloader=loader(), val_dataloader=loader(), max_epochs=2,
                    work_dir=tmp_path, default_hooks=QUIET, hooks=[Monitor(log), Callback(log)])
    runner.train()
    return log


def test_callbacks_and_module_methods_are_called_as_trainer_fit_calls_them(tmp_path):
    theirs, ours = run_lightning(), run_hookline(tmp_path)
    expected = [c for c in theirs if c[1] not in DIFFERENT]
    got = [c for c in ours if c[1] not in DIFFERENT]
    assert got == expected, "\n".join(f"{a!s:60} {b}" for a, b in itertools.zip_longest(got, expected))
    # what the comparison covers: both sides of each point, the step counted at the batch's end
    assert got[:5] == [("module", "prepare_data", 0), ("callback", "setup", 0, "fit"),
                       ("module", "setup", 0, "fit"), ("callback", "on_fit_start", 0),
                       ("module", "on_fit_start", 0)]
    first_end = got.index(("callback", "on_train_batch_end", 1, 0))
    assert got[first_end + 1] == ("module", "on_train_batch_end", 1, 0)
    assert ("callback", "on_before_optimizer_step", 0) in got
    assert ("module", "on_after_backward", 3) in got
    epoch_end = got.index(("callback", "on_train_epoch_end", 2))
    assert got[epoch_end:epoch_end + 3] == [("callback", "on_train_epoch_end", 2),
                                            ("module", "on_train_epoch_end", 2),
                                            ("monitor", "on_train_epoch_end", 2)]
    assert got[-2:] == [("callback", "teardown", 4, "fit"), ("module", "teardown", 4, "fit")]
    # on_before_zero_grad: once per step on both sides, the callback's first
    zero = [c for c in ours if c[1] == "on_before_zero_grad"]
    assert zero == [(who, "on_before_zero_grad", step) for step in range(4)
                    for who in ("callback", "module")]
    assert len(zero) == sum(c[1] == "on_before_zero_grad" for c in theirs)


class Gradients(pl.Callback):
    """Keeps the weight's gradient after the backward and before the optimizer step."""

    def __init__(self) -> None:
        self.after_backward: list[torch.Tensor] = []
        self.before_step: list[torch.Tensor] = []

    def on_after_backward(self, trainer, pl_module):
        self.after_backward.append(pl_module.layer.weight.grad.clone())

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self.before_step.append(pl_module.layer.weight.grad.clone())


class Plain(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(1, 1)

    def forward(self, x):
        return self.layer(x)


def test_under_a_loss_scaler_on_before_optimizer_step_sees_unscaled_gradients(tmp_path):
    gradients = Gradients()
    runner = Runner(Plain(), optim_wrapper={"type": "AmpOptimWrapper", "dtype": "bfloat16",
                                            "optimizer": {"type": "SGD", "lr": 0.01}},
                    loss_fn=torch.nn.MSELoss(), train_dataloader=loader(), max_epochs=1,
                    work_dir=tmp_path, default_hooks=QUIET, hooks=[gradients])
    wrapper = runner.optim_wrapper
    wrapper.loss_scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)  # as float16 on CUDA
    runner.train()
    assert len(gradients.before_step) == 2 == len(gradients.after_backward)
    for scaled, unscaled in zip(gradients.after_backward, gradients.before_step):
        assert torch.isfinite(unscaled).all() and unscaled.abs().sum() > 0
        torch.testing.assert_close(scaled, unscaled * 1024.0)  # Lightning's: unscaled first
    assert len(wrapper.before_step) == len(wrapper.after_backward) == 0  # released after the run


class Fails(pl.Callback):
    def on_before_backward(self, trainer, pl_module, loss):
        raise RuntimeError("loss rejected")


def test_a_failing_run_releases_the_optimizer_events(tmp_path):
    runner = Runner(Plain(), optimizer={"type": "SGD", "lr": 0.01}, loss_fn=torch.nn.MSELoss(),
                    train_dataloader=loader(), max_epochs=1, work_dir=tmp_path,
                    default_hooks=QUIET, hooks=[Fails()])
    with pytest.raises(Exception, match="loss rejected") as raised:
        runner.train()
    assert "Fails" in str(raised.value)  # the error names the callback
    wrapper = runner.optim_wrapper
    assert len(wrapper.before_backward) == 0
    assert vars(wrapper).keys().isdisjoint({"backward", "step", "zero_grad"})  # nothing patched
