"""hookline hooks and inspect tools inside a real ``lightning.Trainer.fit`` on CPU."""

from __future__ import annotations

import csv
import doctest

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import Hook
from hookline.core import ConfigError

from ._lightning_twins import BATCH, TwinModule, data, fit_hookline, initial_net, one_thread, pl  # noqa: F401

lightning_bridge = pytest.importorskip("hookline.integrations.lightning")
HookCallback = lightning_bridge.HookCallback
facade = pytest.importorskip("hookline.integrations.lightning_facade")
inspect_module = pytest.importorskip("hookline.integrations.lightning_inspect")


class Trace(Hook):
    """Records (stage, epoch, iter) at every stage, plus what a ported hook reads of the runner."""

    def __init__(self) -> None:
        self.trace: list[tuple[str, int, int]] = []
        self.lrs: list[float] = []
        self.val_metrics: list[dict] = []

    def _add(self, stage, runner):
        self.trace.append((stage, runner.epoch, runner.iter))


for _stage in ("before_run", "before_train", "before_train_epoch", "before_train_iter",
               "after_train_iter", "after_train_epoch", "before_val", "before_val_epoch",
               "before_val_iter", "after_val_iter", "after_val", "after_train", "after_run"):
    setattr(Trace, _stage, lambda self, runner, _s=_stage, **kwargs: self._add(_s, runner))


def _after_val_epoch(self, runner, metrics=None):
    self._add("after_val_epoch", runner)
    self.val_metrics.append(dict(metrics))
    self.lrs.append(runner.optim_wrapper.get_lr()["lr"][0])
    assert runner.max_epochs == 2 and runner.max_iters == 2 * 3
    assert runner.message_hub.latest("train/loss") > 0


Trace.after_val_epoch = _after_val_epoch


def trainer(tmp_path, callbacks, epochs=2, **kwargs):
    return pl.Trainer(max_epochs=epochs, accelerator="cpu", devices=1, enable_progress_bar=False,
                      enable_checkpointing=False, enable_model_summary=False,
                      num_sanity_val_steps=kwargs.pop("num_sanity_val_steps", 0),
                      logger=kwargs.pop("logger", False), default_root_dir=str(tmp_path),
                      callbacks=callbacks, **kwargs)


def loaders():
    train, val = data(noise=0.0)
    return DataLoader(train, batch_size=BATCH), DataLoader(val, batch_size=BATCH)


def test_docstring_examples():
    for module in (lightning_bridge, facade, inspect_module):
        assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


def test_a_hook_sees_the_stages_and_counters_a_runner_gives_it(tmp_path):
    in_lightning = Trace()
    trainer(tmp_path, [HookCallback(in_lightning)], num_sanity_val_steps=2).fit(
        TwinModule(initial_net(), 0.5), *loaders())
    in_runner = Trace()
    fit_hookline(lambda: [in_runner], epochs=2, noise=0.0)
    assert in_lightning.trace == in_runner.trace  # same order, same epoch and iter at each stage
    assert in_lightning.lrs == in_runner.lrs == [0.5, 0.5]
    # the metrics are trainer.callback_metrics, named as the LightningModule logs them
    assert [m["val_loss"] for m in in_lightning.val_metrics] == pytest.approx(
        [m["loss"] for m in in_runner.val_metrics], rel=1e-5)


def test_a_hook_stops_the_trainer_and_keeps_its_state_in_lightning_checkpoints(tmp_path):
    class StopAfterOne(Hook):
        def __init__(self):
            self.epochs = 0

        def after_train_epoch(self, runner):
            self.epochs += 1
            runner.stop_training = True

        def state_dict(self):
            return {"epochs": self.epochs}

        def load_state_dict(self, state):
            self.epochs = state["epochs"]

    hook = StopAfterOne()
    fit = trainer(tmp_path, [HookCallback(hook)], epochs=5)
    fit.fit(TwinModule(initial_net(), 0.5), *loaders())
    assert fit.current_epoch == 1 and hook.epochs == 1
    fit.save_checkpoint(tmp_path / "last.ckpt")
    saved = torch.load(tmp_path / "last.ckpt", weights_only=False)["callbacks"]
    assert saved["HookCallback[StopAfterOne]"] == {"StopAfterOne": {"epochs": 1}}
    restored = StopAfterOne()
    HookCallback(restored).load_state_dict(saved["HookCallback[StopAfterOne]"])
    assert restored.epochs == 1


class ReluModule(TwinModule):
    def __init__(self):
        torch.manual_seed(0)
        super().__init__(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                             torch.nn.Linear(8, 2)), lr=0.5)


def metrics_csv(tmp_path) -> list[dict[str, str]]:
    (path,) = tmp_path.rglob("metrics.csv")
    return list(csv.DictReader(path.read_text().splitlines()))


def test_gradient_monitor_callback_logs_through_the_trainers_logger(tmp_path):
    callback = lightning_bridge.GradientMonitorCallback(interval=2, by_epoch=False)
    module = ReluModule()
    trainer(tmp_path, [callback], logger=pl.loggers.CSVLogger(str(tmp_path)),
            log_every_n_steps=1).fit(module, *loaders())
    rows = [r for r in metrics_csv(tmp_path) if r.get("grad_norm/total")]
    assert [int(r["step"]) for r in rows] == [2, 4, 6]
    assert float(rows[0]["grad_norm/net.0.weight"]) > 0 and "grad_alerts/nan" in rows[0]
    assert sorted(callback.monitor.report()) == ["net.0.bias", "net.0.weight", "net.2.bias",
                                                 "net.2.weight"]
    assert all(not p._backward_hooks for p in module.parameters())  # noqa: SLF001  (all removed)


def test_activation_stats_callback_logs_each_layer(tmp_path):
    callback = lightning_bridge.ActivationStatsCallback(interval=3)
    trainer(tmp_path, [callback], logger=pl.loggers.CSVLogger(str(tmp_path)),
            log_every_n_steps=1).fit(ReluModule(), *loaders())
    rows = [r for r in metrics_csv(tmp_path) if r.get("activations/mean/net.1")]
    assert len(rows) == 2 and 0 <= float(rows[0]["activations/dead/net.1"]) <= 1


def test_feature_extractor_callback_keeps_a_whole_pass(tmp_path):
    callback = lightning_bridge.FeatureExtractorCallback(["net.1"], stages=("validate", "test"))
    module = ReluModule()
    train, val = loaders()
    fit = trainer(tmp_path, [callback], epochs=1, logger=pl.loggers.CSVLogger(str(tmp_path)))
    fit.fit(module, train, val)
    features = callback.features["validate"]["net.1"]
    x_val = val.dataset.tensors[0]
    with torch.no_grad():
        torch.testing.assert_close(features, module.net[1](module.net[0](x_val)))
    assert "features/net.1/mean" in metrics_csv(tmp_path)[-1]
    assert "test" not in callback.features
    with pytest.raises(ConfigError, match="stages"):
        lightning_bridge.FeatureExtractorCallback(["net.1"], stages=("fit",))
