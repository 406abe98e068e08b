"""mmcv 1.x ports that used to go wrong on the runner side: ``runner.meta`` in checkpoints
and across resume, ``save_checkpoint(meta=)``, EvalHook's messages, log buffer and loader,
``runner.data_loader`` assignment, ``outputs['log_vars']``, ``work_dir``, ``call_hook``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import ConfigError
from hookline.compat.mmcv.runner import CheckpointHook, EvalHook, Hook, LoggerHook
from hookline.compat.mmcv.runner.runner_view import runner_view
from hookline.core.errors import HookError

from ..conftest import make_runner, toy_data


def load(path):
    return torch.load(path, weights_only=True)


class Messages(Hook):
    """Reads ``runner.meta['hook_msgs']`` after every other hook of the epoch."""

    priority = "LOWEST"

    def __init__(self):
        self.seen = []

    def after_train_epoch(self, runner):
        self.seen.append(dict(runner.meta["hook_msgs"]))


def test_save_checkpoint_keeps_meta_and_runner_meta_goes_into_checkpoints(tmp_path):
    class Snapshot(Hook):
        def after_train_epoch(self, runner):
            runner.meta["hook_msgs"]["custom"] = runner.epoch
            runner.save_checkpoint(runner.work_dir, filename_tmpl="snap_{}.pth",
                                   save_optimizer=False, meta=dict(note="mine", epoch=99))
            self.last = runner.meta["hook_msgs"].get("last_ckpt")

    snapshot, messages = Snapshot(), Messages()
    runner = make_runner(tmp_path, hooks=[snapshot, CheckpointHook(interval=1), messages])
    runner.train()
    meta = load(tmp_path / "snap_2.pth")["meta"]
    assert meta["note"] == "mine" and (meta["epoch"], meta["iter"]) == (2, 16)  # mmcv's win
    assert meta["hook_msgs"] == {"custom": 1, "last_ckpt": str(tmp_path / "epoch_1.pth")}
    assert snapshot.last == str(tmp_path / "epoch_1.pth")  # save_checkpoint did not set it
    assert [Path(m["last_ckpt"]).name for m in messages.seen] == ["epoch_1.pth", "epoch_2.pth"]
    assert load(tmp_path / "epoch_2.pth")["meta"]["hook_msgs"]["last_ckpt"] == \
        str(tmp_path / "epoch_1.pth")  # set after each save, as in mmcv

    class BadMeta(Hook):
        def after_train_epoch(self, runner):
            runner.save_checkpoint(runner.work_dir, meta=["not", "a", "dict"])

    with pytest.raises(HookError) as err:
        make_runner(tmp_path / "b", hooks=[BadMeta()]).train()
    assert isinstance(err.value.original, ConfigError) and "meta" in str(err.value.original)


def test_runner_meta_comes_back_on_resume_not_on_loading_weights(tmp_path):
    class Note(Hook):
        def after_train_epoch(self, runner):
            runner.meta["hook_msgs"]["custom"] = "kept"

    first = make_runner(tmp_path / "a", max_epochs=1, hooks=[Note()],
                        default_hooks={"checkpoint": CheckpointHook(interval=1)})
    first.train()
    path = tmp_path / "a" / "epoch_1.pth"

    class ResumeInHook(Hook):  # mmcv's EMAHook(resume_from=...) pattern
        def __init__(self, how):
            self.how, self.seen = how, []

        def before_run(self, runner):
            getattr(runner, self.how)(str(path))
            self.seen.append(dict(runner.meta["hook_msgs"]))

    resumed = ResumeInHook("resume")
    make_runner(tmp_path / "b", max_epochs=2, hooks=[resumed]).train()
    assert resumed.seen[0] == {"custom": "kept"}  # last_ckpt is set after its own file
    weights = ResumeInHook("load_checkpoint")
    make_runner(tmp_path / "c", max_epochs=1, hooks=[weights]).train()
    assert weights.seen[0] == {}

    messages = Messages()  # Runner(resume=...): restored before the first epoch
    make_runner(tmp_path / "d", max_epochs=2, hooks=[messages], resume=str(path)).train()
    assert messages.seen[0]["custom"] == "kept"


def test_eval_hook_records_its_best_in_hook_msgs_and_its_attributes(tmp_path):
    messages = Messages()
    hook = EvalHook(DataLoader(toy_data(32, seed=3), batch_size=16), save_best="acc")
    runner = make_runner(tmp_path, max_epochs=3, metrics={"acc": "accuracy"},
                         hooks=[hook, messages])
    assert hook.key_indicator == "acc" and hook.best_ckpt_path is None
    runner.train()
    best = hook.best.best_ckpt
    assert hook.best_ckpt_path == str(tmp_path / best)
    assert messages.seen[-1] == {"best_score": hook.best.best_score, "best_ckpt": str(tmp_path / best)}
    assert load(tmp_path / best)["meta"]["hook_msgs"]["best_ckpt"] == str(tmp_path / best)
    assert EvalHook(DataLoader(toy_data()), save_best="auto").key_indicator == "auto"


def test_eval_hook_results_reach_the_log_buffer_and_its_loader_is_data_loader(tmp_path):
    class Reader(Hook):
        priority = "LOWEST"

        def __init__(self):
            self.acc, self.loaders = [], []

        def after_train_epoch(self, runner):
            self.acc.append(runner.log_buffer.output.get("acc"))

        def before_val_epoch(self, runner):
            self.loaders.append((runner.mode, len(runner.data_loader)))

    reader, val = Reader(), DataLoader(toy_data(24), batch_size=8)
    runner = make_runner(tmp_path, max_epochs=2, metrics={"acc": "accuracy"},
                         hooks=[EvalHook(val), reader])
    runner.train()
    assert None not in reader.acc and reader.loaders == [("val", 3), ("val", 3)]

    class EpochOnly(Hook):  # no mmcv hook at a val stage: EvalHook feeds the buffer itself
        priority = "LOWEST"

        def after_train_epoch(self, runner):
            reader.acc.append(runner.log_buffer.output.get("acc"))

    reader.acc.clear()
    make_runner(tmp_path / "b", max_epochs=2, metrics={"acc": "accuracy"},
                hooks=[EvalHook(val), EpochOnly()]).train()
    assert len(reader.acc) == 2 and None not in reader.acc


def test_checkpoint_hook_out_dir_as_mmcv(tmp_path):
    out = tmp_path / "out"
    hook = CheckpointHook(interval=1, out_dir=str(out))
    make_runner(tmp_path / "work", max_epochs=1, hooks=[hook]).train()
    assert hook.out_dir == out / "work" and (out / "work" / "epoch_1.pth").is_file()
    plain = CheckpointHook(interval=1)
    make_runner(tmp_path / "w2", max_epochs=1, hooks=[plain]).train()
    assert plain.out_dir == tmp_path / "w2"
    with pytest.raises(ConfigError, match="remote storage"):
        CheckpointHook(out_dir="s3://bucket/exp")


def test_assigning_data_loader_in_before_train_epoch(tmp_path):
    sizes = []

    class Switch(Hook):
        def before_train_epoch(self, runner):
            if runner.epoch == 1:
                runner.data_loader = DataLoader(toy_data(), batch_size=16)

        def before_train_iter(self, runner):
            sizes.append((runner.epoch, runner.data_batch[0].shape[0]))

    make_runner(tmp_path, hooks=[Switch()]).train()
    assert sorted(set(sizes)) == [(0, 8), (1, 16)]

    class InVal(Hook):
        def before_val_epoch(self, runner):
            runner.data_loader = DataLoader(toy_data(), batch_size=16)

    with pytest.raises(HookError) as err:
        make_runner(tmp_path / "b", hooks=[InVal()],
                    val_dataloader=DataLoader(toy_data(), batch_size=32)).train()
    assert isinstance(err.value.original, ConfigError) and "'val'" in str(err.value.original)


class TwoLosses(torch.nn.Module):
    def __init__(self, mmcv_style=False):
        super().__init__()
        self.fc, self.mmcv_style = torch.nn.Linear(4, 2), mmcv_style

    def forward(self, x):
        return self.fc(x)

    def training_step(self, batch):
        x, y = batch
        out = self(x)
        cls, reg = torch.nn.functional.cross_entropy(out, y), out.pow(2).mean() * 0.01
        if self.mmcv_style:  # mmcv's train_step dict
            log_vars = {"loss": (cls + reg).item(), "loss_cls": cls.item(), "loss_reg": reg.item()}
            return {"loss": cls + reg, "log_vars": log_vars, "num_samples": len(x)}
        return {"loss": cls + reg, "loss_cls": cls, "loss_reg": reg}


def test_log_vars_hold_the_models_variables_and_feed_the_log_buffer(tmp_path):
    class Spy(LoggerHook):
        def __init__(self):
            super().__init__(interval=4)
            self.keys, self.out = [], []

        def after_train_iter(self, runner):
            self.keys.append(sorted(runner.outputs["log_vars"]))
            super().after_train_iter(runner)

        def log(self, runner):
            self.out.append(sorted(runner.log_buffer.output))

    for mmcv_style in (False, True):
        spy = Spy()
        make_runner(tmp_path / str(mmcv_style), max_epochs=1, loss_fn=None,
                    model=TwoLosses(mmcv_style), hooks=[spy]).train()
        assert spy.keys[0] == ["loss", "loss_cls", "loss_reg"]
        assert spy.out[0] == ["loss", "loss_cls", "loss_reg"]


def test_work_dir_is_a_str_and_call_hook_checks_names_and_keeps_the_mode(tmp_path):
    seen = []

    class Caller(Hook):
        def before_run(self, runner):
            seen.append((runner.work_dir + "/vis", type(runner.work_dir)))

        def after_train_epoch(self, runner):
            runner.call_hook("after_val_epoch")
            seen.append(runner.mode)

    class ValSeen(Hook):
        def after_val_epoch(self, runner):
            seen.append(("val", runner.mode))

    make_runner(tmp_path, max_epochs=1, hooks=[Caller(), ValSeen()]).train()
    assert seen == [(f"{tmp_path}/vis", str), ("val", "val"), "train"]

    class Typo(Hook):
        def after_train_epoch(self, runner):
            runner.call_hook("after_val_epcoh")

    with pytest.raises(HookError) as err:
        make_runner(tmp_path / "b", max_epochs=1, hooks=[Typo()]).train()
    assert isinstance(err.value.original, ConfigError)
    assert "'after_val_epoch'" in str(err.value.original)
    runner = make_runner(tmp_path / "c")  # a view holds its Runner weakly: keep the Runner
    view = runner_view(runner)
    view.work_dir = tmp_path / "d"
    assert view.work_dir == str(tmp_path / "d")
