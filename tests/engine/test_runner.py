"""The Runner: construction errors, stages, hook order and dispatch, errors, outputs."""

from __future__ import annotations

import copy
import json
import re
import threading

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import HOOKS, CheckpointError, ConfigError, Hook, HookError, Priority, Runner
from hookline.engine.hook import STAGES
from hookline.engine.samplers import EpochSampler
from hookline.hooks import CheckpointHook, LoggerHook, TextLoggerHook

from .toy import Net, dataset, make_runner
from .toy import make_runner as make_toy_runner


class Recorder(Hook):
    """Records every stage it sees (overrides all of them)."""

    def __init__(self) -> None:
        self.calls: list[str] = []


for _stage in STAGES:
    def _record(self, runner, *args, _stage=_stage, **kwargs):
        self.calls.append(_stage)
    setattr(Recorder, _stage, _record)


def test_stage_order_of_a_training_run(tmp_path):
    recorder = Recorder()
    runner = make_runner(tmp_path, max_epochs=1, hooks=[recorder])
    runner.train()
    calls = recorder.calls
    iters = len(runner.train_dataloader)
    expected = (["before_run", "before_train", "before_train_epoch"]
                + ["before_train_iter", "after_train_iter"] * iters
                + ["after_train_epoch", "before_val", "before_val_epoch"])
    assert calls[: len(expected)] == expected
    val = calls[calls.index("before_val"):]
    assert val.count("before_val_iter") == len(runner.val_dataloader)
    # the epoch checkpoint is written once, after the validation that follows the epoch
    assert calls.count("before_save_checkpoint") == 1
    assert calls[-5:] == ["after_val_epoch", "after_val", "before_save_checkpoint",
                          "after_train", "after_run"]


def test_a_finished_run_leaves_no_checkpoint_thread_behind(tmp_path):
    """Runners made one after another (a notebook, a sweep) do not pile up writer threads."""
    def writer_threads():
        return {t for t in threading.enumerate() if t.name == "hookline-checkpoints"}

    before = writer_threads()
    for run in range(3):
        runner = make_runner(tmp_path / str(run), max_epochs=1)
        runner.train()
        assert (tmp_path / str(run) / "epoch_1.pth").exists()
        assert writer_threads() <= before
    runner.save_checkpoint("again.pth")  # the same Runner still writes checkpoints afterwards
    runner.flush_checkpoints()
    assert (tmp_path / "2" / "again.pth").exists()


def test_hooks_run_by_priority_defaults_first_on_ties(tmp_path):
    order: list[str] = []

    class Named(Hook):
        def __init__(self, name, priority="NORMAL"):
            self.name, self.priority = name, priority

        def before_train_iter(self, runner, batch_idx, data_batch=None):
            if batch_idx == 0:
                order.append(self.name)

    runner = make_runner(tmp_path, max_epochs=1, default_hooks={"timer": None})
    runner.register_hook(Named("normal-1"))
    runner.register_hook(Named("low", "LOW"))
    runner.register_hook(Named("high-by-arg", "LOWEST"), priority="HIGH")
    runner.register_hook(Named("normal-2"))
    runner.register_hook(Named("int-45", 45))
    runner.train()
    assert order == ["high-by-arg", "int-45", "normal-1", "normal-2", "low"]


def test_config_priority_and_default_before_custom(tmp_path):
    @HOOKS.register(name="_TestCfgHook", force=True)
    class CfgHook(Hook):
        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            pass

    runner = make_runner(tmp_path, hooks=[{"type": "_TestCfgHook", "priority": "VERY_LOW"}])
    table = next(line for line in runner.hook_table().splitlines()
                 if line.startswith("after_train_iter "))
    # equal priority (VERY_LOW): the default CheckpointHook comes before the custom hook
    assert table.index("CheckpointHook") < table.index("CfgHook")
    assert runner.hooks.priority_of(runner.hooks.hooks[-1]) == Priority.VERY_LOW


def test_each_stage_dispatches_only_to_hooks_that_override_it(tmp_path):
    class OnlyEpochs(Hook):
        def __init__(self):
            self.epochs = 0

        def after_train_epoch(self, runner):
            self.epochs += 1

    hook = OnlyEpochs()
    runner = make_runner(tmp_path, max_epochs=2, hooks=[hook])
    assert hook.triggered_stages() == ["after_train_epoch"]
    assert all(m.__self__ is not hook for m in runner.hooks.stages["after_train_iter"])
    runner.train()
    assert hook.epochs == 2


def test_mode_generic_methods_trigger_all_modes():
    class Generic(Hook):
        def _after_iter(self, runner, batch_idx, data_batch=None, outputs=None, mode="train"):
            pass

    assert Generic().triggered_stages() == ["after_train_iter", "after_val_iter",
                                            "after_test_iter"]


def test_handle_removes_hook_and_registration_errors(tmp_path):
    hook = Recorder()
    runner = make_runner(tmp_path, max_epochs=1)
    handle = runner.register_hook(hook)
    with pytest.raises(ConfigError, match="already registered"):
        runner.register_hook(hook)
    handle.remove()
    runner.train()
    assert hook.calls == []
    with pytest.raises(ConfigError, match="hookline.Hook instance, a config dict"):
        runner.register_hook(object())
    with pytest.raises(ConfigError, match="did you mean 'CheckpointHook'"):
        runner.register_hook({"type": "CheckpointHok"})


def test_hook_error_names_hook_and_stage_and_every_on_exception_runs(tmp_path):
    seen = []

    class Broken(Hook):
        def before_train_epoch(self, runner):
            raise ValueError("bad epoch")

    class FailingHandler(Hook):
        priority = "HIGHEST"

        def on_exception(self, runner, exception):
            seen.append("failing")
            raise RuntimeError("handler broke")

    class Handler(Hook):
        def on_exception(self, runner, exception):
            seen.append(exception)

    runner = make_runner(tmp_path, hooks=[Broken(), FailingHandler(), Handler()])
    with pytest.raises(HookError) as info:
        runner.train()
    error = info.value
    assert "Broken" in str(error) and "before_train_epoch" in str(error)
    assert error.point == "before_train_epoch" and isinstance(error.__cause__, ValueError)
    assert seen == ["failing", error]
    assert "handler broke" in (tmp_path / "log.txt").read_text()


def test_stop_training_ends_after_current_iteration(tmp_path):
    class Stop(Hook):
        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            if runner.iter + 1 == 5:
                runner.stop_training = True

    runner = make_runner(tmp_path, hooks=[Stop()])
    runner.train()
    assert runner.iter == 5 and runner.epoch == 0


def test_default_hooks_replace_and_remove(tmp_path):
    runner = make_runner(tmp_path, max_epochs=2, default_hooks={
        "checkpoint": {"type": "CheckpointHook", "interval": 5, "by_epoch": False},
        "logger": None,
    })
    assert "LoggerHook" not in runner.hook_table()
    runner.train()
    names = sorted(p.name for p in tmp_path.glob("*.pth"))
    assert names == ["iter_10.pth", "iter_15.pth", "iter_16.pth", "iter_5.pth"]
    assert not (tmp_path / "metrics.jsonl").exists()


def test_construction_errors_are_clear(tmp_path):
    model = Net()
    with pytest.raises(ConfigError, match="not both"):
        Runner(model, max_epochs=1, max_iters=1, work_dir=tmp_path)
    with pytest.raises(ConfigError, match="max_epochs must be an int >= 1"):
        Runner(model, max_epochs=0, work_dir=tmp_path)
    with pytest.raises(ConfigError, match="did you mean 'Adam'"):
        Runner(model, optimizer={"type": "Adamm"}, work_dir=tmp_path)
    with pytest.raises(ConfigError, match="unexpected argument.*'lrr'.*did you mean 'lr'"):
        Runner(model, optimizer={"type": "SGD", "lrr": 0.1}, work_dir=tmp_path)
    with pytest.raises(ConfigError, match="device"):
        Runner(model, device="tpu9", work_dir=tmp_path)
    runner = Runner(model, optimizer={"type": "SGD", "lr": 0.1}, max_epochs=1, work_dir=tmp_path,
                    train_dataloader=DataLoader(dataset(), batch_size=4))
    with pytest.raises(ConfigError, match="loss_fn"):
        runner.train()
    with pytest.raises(ConfigError, match="val_dataloader"):
        runner.val()


class StepModel(Net):
    """A model with its own steps: returns extra scalars to log."""

    def training_step(self, batch):
        x, y = batch
        logits = self(x)
        return {"loss": torch.nn.functional.cross_entropy(logits, y),
                "acc": (logits.argmax(1) == y).float().mean()}

    def validation_step(self, batch):
        x, y = batch
        return {"preds": self(x), "targets": y, "loss": torch.nn.functional.cross_entropy(self(x), y)}


def test_training_step_contract_and_logged_extras(tmp_path):
    torch.manual_seed(0)
    runner = Runner(StepModel(), optimizer={"type": "SGD", "lr": 0.1}, max_epochs=2,
                    train_dataloader=DataLoader(dataset(), batch_size=8, shuffle=True),
                    val_dataloader=DataLoader(dataset(), batch_size=8),
                    metrics={"accuracy": "accuracy"}, work_dir=tmp_path,
                    default_hooks={"logger": {"type": "LoggerHook", "interval": 4}})
    runner.train()
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r["mode"] == "train"]
    val = [r for r in records if r["mode"] == "val"]
    assert all("acc" in r and "loss" in r and "lr" in r for r in train)
    assert [r["epoch"] for r in val] == [1, 2]
    assert set(val[0]) >= {"accuracy", "loss", "iter"}
    assert set(runner.outputs) == {"loss", "acc"}


def test_training_step_without_loss_is_a_clear_error(tmp_path):
    class NoLoss(Net):
        def training_step(self, batch):
            return {"value": self(batch[0]).sum()}

    runner = Runner(NoLoss(), optimizer={"type": "SGD", "lr": 0.1}, max_epochs=1,
                    train_dataloader=DataLoader(dataset(), batch_size=8), work_dir=tmp_path)
    with pytest.raises(TypeError, match="NoLoss.training_step must return a loss tensor or a "
                                        "dict with a 'loss'"):
        runner.train()


def test_val_and_test_return_metrics_exact_over_the_epoch(tmp_path):
    runner = make_runner(tmp_path, test_dataloader=DataLoader(dataset(), batch_size=7))
    metrics = runner.val()
    test_metrics = runner.test()
    model = runner.model.eval()
    x, y = dataset().tensors
    with torch.no_grad():
        logits = model(x)
    expected = (logits.argmax(1) == y).float().mean().item()
    assert metrics["accuracy"] == pytest.approx(expected)
    assert test_metrics["accuracy"] == pytest.approx(expected)
    assert metrics["loss"] == pytest.approx(torch.nn.functional.cross_entropy(logits, y).item(),
                                            rel=1e-6)


def test_torchmetrics_metric_matches_callable(tmp_path):
    torchmetrics = pytest.importorskip("torchmetrics")
    runner = make_runner(tmp_path, metrics={
        "accuracy": "accuracy",
        "tm_accuracy": torchmetrics.Accuracy(task="multiclass", num_classes=3),
    })
    metrics = runner.val()
    assert metrics["tm_accuracy"] == pytest.approx(metrics["accuracy"])


def test_checkpoint_contents_and_checkpoint_stages(tmp_path):
    class AddEntry(Hook):
        def before_save_checkpoint(self, runner, checkpoint):
            checkpoint["extra"] = {"note": "hello"}

        def after_load_checkpoint(self, runner, checkpoint):
            # seen before it is applied: edits take effect
            checkpoint["state_dict"] = {k: torch.zeros_like(v)
                                        for k, v in checkpoint["state_dict"].items()}

    runner = make_runner(tmp_path, max_epochs=1, hooks=[AddEntry()])
    runner.train()
    checkpoint = torch.load(tmp_path / "epoch_1.pth", weights_only=True)
    assert set(checkpoint) >= {"meta", "state_dict", "optimizer", "param_schedulers", "hooks",
                               "rng", "extra"}
    meta = checkpoint["meta"]
    assert (meta["epoch"], meta["iter"], meta["batch"], meta["seed"]) == (1, 8, 0, 0)
    assert meta["hookline_version"] and meta["torch_version"]
    assert "CheckpointHook" in checkpoint["hooks"]
    other = make_runner(tmp_path / "other", max_epochs=1, hooks=[AddEntry()],
                        load_from=tmp_path / "epoch_1.pth")
    other.val()
    assert all(torch.count_nonzero(v) == 0 for v in other.model.state_dict().values())


def test_load_from_loads_weights_only(tmp_path):
    first = make_runner(tmp_path / "a", max_epochs=1)
    first.train()
    second = make_runner(tmp_path / "b", load_from=tmp_path / "a" / "epoch_1.pth")
    second.val()
    assert (second.epoch, second.iter) == (0, 0)
    for key, value in first.model.state_dict().items():
        assert torch.equal(value, second.model.state_dict()[key])


def test_resume_from_broken_file_is_a_checkpoint_error(tmp_path):
    make_runner(tmp_path, max_epochs=2).train()
    broken = tmp_path / "epoch_2.pth"
    broken.write_bytes(broken.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="epoch_2.pth"):
        make_runner(tmp_path, resume=broken).train()


def test_resume_auto_falls_back_to_an_older_checkpoint(tmp_path):
    make_runner(tmp_path, max_epochs=2).train()
    newest = tmp_path / "epoch_2.pth"
    newest.write_bytes(newest.read_bytes()[:100])
    runner = make_runner(tmp_path, resume="auto")
    runner.train()
    log = (tmp_path / "log.txt").read_text()
    assert "epoch_2.pth" in log and "resumed from" in log and "epoch_1.pth" in log
    assert runner.epoch == 4


def test_hook_helpers():
    class FakeRunner:
        epoch, iter, max_epochs, max_iters, by_epoch = 3, 9, 4, 10, True

    runner = FakeRunner()
    assert Hook.every_n_epochs(runner, 2) and not Hook.every_n_epochs(runner, 3)
    assert Hook.every_n_train_iters(runner, 5) and not Hook.every_n_train_iters(runner, 3)
    assert Hook.every_n_inner_iters(3, 2) and not Hook.every_n_inner_iters(2, 2)
    assert Hook.end_of_epoch(range(4), 3) and not Hook.end_of_epoch(range(4), 2)
    assert Hook.is_last_train_epoch(runner) and Hook.is_last_train_iter(runner)
    assert Hook().state_dict() == {} and Hook().triggered_stages() == []


# -- MMEngine's runner attributes ----------------------------------------------------------------
def test_cfg_timestamp_experiment_name_and_visualizer(tmp_path):
    loader_cfg = {"dataset": {"type": "TensorDataset"}, "batch_size": 4}
    runner = Runner(Net(), optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
                    max_epochs=1, work_dir=tmp_path / "run", train_dataloader=DataLoader(dataset()),
                    val_dataloader=loader_cfg | {"dataset": dataset()}, seed=3)
    assert runner.cfg.max_epochs == 1 and runner.cfg.optimizer.lr == 0.1 and runner.cfg.seed == 3
    assert "train_dataloader" not in runner.cfg  # a DataLoader object is not config data
    assert copy.deepcopy(runner.cfg).optimizer.type == "SGD"
    assert len(runner.timestamp) == 15 and runner.experiment_name == f"run_{runner.timestamp}"
    runner.visualizer.add_scalars({"loss": torch.tensor(0.5)}, step=2)
    scalars = runner.work_dir / runner.timestamp / "vis_data" / "scalars.json"
    assert json.loads(scalars.read_text()) == {"loss": 0.5, "step": 2}
    configured = Runner(Net(), config={"experiment_name": "exp", "max_epochs": 1},
                        work_dir=tmp_path / "cfg")
    assert configured.experiment_name == "exp" and configured.cfg.max_epochs == 1


def test_build_dataloader_builds_a_sharded_loader_from_a_config():
    loader = Runner.build_dataloader({"dataset": dataset(12), "batch_size": 4, "shuffle": True})
    assert len(loader) == 3 and isinstance(loader.sampler, EpochSampler)
    with pytest.raises(ConfigError, match="dataset"):
        Runner.build_dataloader({"batch_size": 4})


def test_a_list_of_batches_is_named_not_printed_with_the_fix(tmp_path):
    torch.manual_seed(0)
    batches = [(torch.randn(32, 6), torch.randint(0, 3, (32,))) for _ in range(64)]
    with pytest.raises(ConfigError) as info:
        Runner(Net(), optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
               max_epochs=1, train_dataloader=batches, work_dir=tmp_path)
    message = str(info.value)
    assert "train_dataloader" in message and "got list [(tensor(" in message
    assert "DataLoader(batches, batch_size=None)" in message and len(message) < 500
    runner = Runner(Net(), optimizer={"type": "SGD", "lr": 0.1}, max_epochs=1, work_dir=tmp_path,
                    loss_fn=torch.nn.CrossEntropyLoss(),
                    train_dataloader=DataLoader(batches, batch_size=None))  # the fix it names
    runner.train()
    assert runner.iter == 64


def test_mmengine_runner_attributes_hooks_read(tmp_path):
    runner = make_toy_runner(tmp_path, max_epochs=1)
    assert runner.model_name == "Net" and runner.distributed is False
    assert runner.log_dir == tmp_path / runner.timestamp and runner.log_dir.is_dir()
    assert runner.val_evaluator is runner.val_loop.evaluator and runner.test_evaluator is None
    assert list(runner.hooks) == runner.hooks.hooks and len(runner.hooks) >= 3


@pytest.mark.parametrize("kwargs, message", [
    ({"callbacks": []}, "Runner got an unexpected argument 'callbacks': pass hooks=[...] "
                        "(Keras and Lightning callbacks go there too)"),
    ({"custom_hooks": []}, "unexpected argument 'custom_hooks': pass hooks=[...]"),
    ({"train_cfg": {"max_epochs": 2}}, "'train_cfg': pass max_epochs= or max_iters="),
    ({"max_epoch": 2}, "unknown Runner argument 'max_epoch'; did you mean 'max_epochs'"),
])
def test_arguments_of_other_runners_and_typos_are_one_error_naming_what_to_pass(
        tmp_path, kwargs, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        Runner(torch.nn.Linear(2, 2), work_dir=tmp_path / "run", **kwargs)
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_a_hook_doing_a_default_hooks_job_is_warned_about(tmp_path, capsys):
    def warned() -> list[str]:
        return [line for line in capsys.readouterr().out.splitlines() if "both will run" in line]

    runner = make_runner(tmp_path, max_epochs=1,
                         hooks=[CheckpointHook(interval=2), TextLoggerHook(), Recorder()])
    first = warned()
    assert len(first) == 2
    assert "WARNING" in first[0] and "default_hooks={'checkpoint': None}" in first[0]
    assert "TextLoggerHook" in first[1] and "'logger'" in first[1]
    runner.register_hook(LoggerHook(interval=3))  # added later: warned too
    assert len(warned()) == 1
    make_runner(tmp_path / "b", max_epochs=1, hooks=[CheckpointHook(interval=2)],
                default_hooks={"checkpoint": None, "logger": {"type": "TextLoggerHook"}})
    assert warned() == []
