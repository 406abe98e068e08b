"""MessageHub: windowed scalar histories (tensors detached, never synced on update), what
``update_many`` keeps, and what a training run puts there for loggers and hooks."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, MessageHub, Runner
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

from .toy import make_runner


def test_latest_and_mean_over_the_window():
    hub = MessageHub(window=3)
    for value in (1.0, 2.0, 3.0, 10.0):
        hub.update("train/loss", value)
    assert hub.latest("train/loss") == 10.0
    assert hub.mean("train/loss") == pytest.approx(5.0)  # 2, 3, 10: the first fell out
    assert hub.mean("train/loss", count=2) == pytest.approx(6.5)
    assert isinstance(hub.latest("train/loss"), float)


def test_tensors_are_stored_detached_and_read_as_floats():
    hub = MessageHub()
    leaf = torch.ones(3, requires_grad=True)
    hub.update("train/loss", (leaf * 2).sum())
    hub.update("train/loss", torch.tensor(4.0))
    assert hub.latest("train/loss") == 4.0 and hub.mean("train/loss") == pytest.approx(5.0)
    assert isinstance(hub.mean("train/loss"), float)
    # the stored value holds no autograd graph: the leaf it came from can be freed
    alive = weakref.ref(leaf)
    del leaf
    gc.collect()
    assert alive() is None


def test_mean_mixes_numbers_and_tensors_of_any_shape_with_one_element():
    hub = MessageHub()
    hub.update("x", 1)
    hub.update("x", torch.tensor([2.0]))
    hub.update("x", torch.tensor(3, dtype=torch.int64))
    assert hub.mean("x") == pytest.approx(2.0)


def test_windows_are_taken_now_and_read_later():
    """A logger takes the windows at a log step and averages them on another thread: values
    recorded after the windows were taken do not leak into them."""
    hub = MessageHub(window=4)
    for step in range(1, 4):
        hub.update_many("train", {"loss": torch.tensor(float(step)), "time": 0.5 * step})
    hub.update_scalar("train/samples", 10.0, count=2)
    windows = hub.windows("train/", count=2)
    hub.update_many("train", {"loss": torch.tensor(100.0), "time": 100.0})
    assert sorted(windows) == ["loss", "samples", "time"]
    assert windows["loss"].mean() == 2.5
    assert windows["time"].mean() == 1.25
    assert windows["samples"].counts == [2] and windows["samples"].mean() == 10.0
    assert hub.mean("train/loss", 2) == 51.5  # the hub itself moved on


def test_update_many_keeps_scalars_only_under_a_prefix():
    hub = MessageHub()
    hub.update_many("train", {"loss": torch.tensor(0.5), "acc": 0.75, "count": 3,
                              "preds": torch.zeros(4, 2), "flag": True, "name": "x",
                              "one": torch.ones(1, 1)})
    assert sorted(hub.keys()) == ["train/acc", "train/count", "train/loss", "train/one"]
    assert hub.keys("train/l") == ["train/loss"]
    assert "train/acc" in hub and "train/preds" not in hub and "train/flag" not in hub


def test_unknown_keys_raise_key_error():
    hub = MessageHub()
    with pytest.raises(KeyError):
        hub.latest("val/accuracy")
    with pytest.raises(KeyError):
        hub.mean("val/accuracy")


def test_clear_forgets_the_keys_under_a_prefix():
    hub = MessageHub()
    for key in ("train/loss", "train/lr", "val/accuracy"):
        hub.update(key, 1.0)
    hub.info["val_metrics"] = {"accuracy": 1.0}
    hub.clear("train/")
    assert hub.keys() == ["val/accuracy"] and hub.info == {"val_metrics": {"accuracy": 1.0}}
    hub.clear()
    assert hub.keys() == []


def test_each_runner_has_its_own_hub_with_the_runs_scalars_and_metrics(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(16, 3)
    data = TensorDataset(x, (x[:, 0] > 0).long())

    class ExtraScalar(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(3, 2)

        def forward(self, inputs):
            return self.linear(inputs)

        def training_step(self, batch):
            logits = self(batch[0])
            return {"loss": torch.nn.functional.cross_entropy(logits, batch[1]),
                    "logits": logits, "scale": 2.0}

    def make(work_dir):
        return Runner(ExtraScalar(), optimizer={"type": "SGD", "lr": 0.1},
                      loss_fn=torch.nn.CrossEntropyLoss(),
                      train_dataloader=DataLoader(data, batch_size=4),
                      val_dataloader=DataLoader(data, batch_size=8), metrics={"acc": "accuracy"},
                      max_epochs=1, work_dir=work_dir, device="cpu",
                      default_hooks={"logger": None, "progress": None, "checkpoint": None})

    runner, other = make(tmp_path / "a"), make(tmp_path / "b")
    assert runner.message_hub is not other.message_hub
    losses: list[float] = []
    runner.on("after_train_iter", lambda r, outputs, **kw: losses.append(outputs["loss"].item()))
    runner.train()
    assert runner.message_hub.latest("train/loss") == pytest.approx(losses[-1])
    assert runner.message_hub.mean("train/loss") == pytest.approx(sum(losses) / len(losses))
    assert runner.message_hub.latest("train/scale") == 2.0
    assert "train/logits" not in runner.message_hub  # not a scalar
    metrics = runner.message_hub.info["val_metrics"]
    assert set(metrics) == {"acc", "loss"}
    assert runner.message_hub.latest("val/acc") == metrics["acc"]
    assert other.message_hub.keys() == []


# -- MMEngine's methods --------------------------------------------------------------------------
def test_mmengine_scalar_methods_and_history_buffers():
    hub = MessageHub(window=4)
    hub.update_scalar("train/loss", torch.tensor(4.0))
    hub.update_scalars({"train/loss": 2.0, "train/acc": {"value": 0.5, "count": 3}})
    hub.update_scalar("train/acc", 1.0, count=1)
    loss = hub.get_scalar("train/loss")
    assert loss.current() == 2.0 and loss.mean() == 3.0 and loss.mean(1) == 2.0
    assert (loss.max(), loss.min(), len(loss)) == (4.0, 2.0, 2)
    acc = hub.get_scalar("train/acc")
    assert acc.mean() == pytest.approx((0.5 * 3 + 1.0) / 4)  # weighted by count
    assert hub.mean("train/acc") == pytest.approx(0.625)
    assert set(hub.log_scalars) == {"train/loss", "train/acc"}
    with pytest.raises(KeyError, match="train/los"):
        hub.get_scalar("train/los")
    with pytest.raises(ValueError, match="one-element"):
        hub.update_scalar("x", torch.ones(3))


def test_mmengine_info_methods_and_live_runtime_info():
    hub = MessageHub()
    hub.update_info("dataset_meta", {"classes": ("a", "b")})
    hub.update_info_dict({"seed": 3, "note": "x"})
    assert hub.get_info("seed") == 3 and hub.get_info("missing", 7) == 7
    assert hub.pop_info("note") == "x" and hub.pop_info("note", None) is None
    hub.live_info = lambda: {"iter": 12}
    hub.update_info("iter", 99)  # the Runner's position wins
    assert hub.get_info("iter") == 12 and hub.runtime_info["seed"] == 3


def test_a_runner_reports_its_position_and_is_the_current_hub(tmp_path):
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    seen = []
    runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2, work_dir=tmp_path,
                    train_dataloader=DataLoader(data, batch_size=4),
                    default_hooks={"logger": None, "progress": None, "checkpoint": None})
    MessageHub()  # a newer hub ...
    runner.on("after_train_epoch", lambda r: seen.append(
        (MessageHub.get_current_instance() is r.message_hub, r.message_hub.get_info("epoch"),
         r.message_hub.get_info("iter"), r.message_hub.runtime_info["max_iters"])))
    runner.train()  # ... but the running Runner's is current
    assert seen == [(True, 0, 4, 8), (True, 1, 8, 8)]  # epoch advances after these hooks


def test_train_lr_and_momentum_read_live_as_mmengines_runtime_info_hook_records_them(tmp_path):
    """``get_scalar("train/lr").current()`` (a common MMEngine hook line) gives the learning
    rate of the iteration, with no per-iteration recording."""
    class Watch(Hook):
        def __init__(self):
            self.seen = []

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            hub = runner.message_hub
            self.seen.append((hub.get_scalar("train/lr").current(),
                              runner.optim_wrapper.get_lr()["lr"][0],
                              hub.get_scalar("train/momentum").current()))

    watch = Watch()
    make_runner(tmp_path, max_epochs=1, hooks=[watch],
                optimizer={"type": "SGD", "lr": 0.1, "momentum": 0.9}).train()
    assert len(watch.seen) == 8 and len({lr for lr, _, _ in watch.seen}) > 1  # StepLR moved it
    assert all(lr == now and momentum == 0.9 for lr, now, momentum in watch.seen)
    runner = make_runner(tmp_path / "b", max_epochs=1)
    with pytest.raises(KeyError, match="'train/nothing' is not in the message hub"):
        runner.message_hub.get_scalar("train/nothing")
