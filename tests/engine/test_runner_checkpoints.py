"""The Runner's checkpoint methods under MMEngine's names and semantics: ``load_checkpoint``
loads the weights only, ``resume`` the whole run, ``save_checkpoint(out_dir, filename,
meta=...)``, and MMEngine's ``resume=True`` / ``False``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hookline import CheckpointError, ConfigError, Hook, Runner
from hookline.engine.checkpoint import load_checkpoint_file

from .toy import make_runner


def test_load_checkpoint_mid_run_loads_weights_and_keeps_the_run_where_it_is(tmp_path):
    """A hook reloading ``epoch_1.pth`` (MMEngine: weights only) does not rewind training."""
    class ReloadFirstEpoch(Hook):
        def __init__(self):
            self.loaded = None

        def after_train_epoch(self, runner):
            if runner.epoch == 1:  # epoch 2 just ended; epoch_1.pth exists
                runner.flush_checkpoints()  # written in the background: wait for it
                self.loaded = {k: v.clone() for k, v in
                               load_checkpoint_file(runner.work_dir / "epoch_1.pth")
                               ["state_dict"].items()}
                state = runner.load_checkpoint(runner.work_dir / "epoch_1.pth")
                assert state["meta"]["epoch"] == 1
                for name, value in runner.model.state_dict().items():
                    assert torch.equal(value, self.loaded[name])

    hook = ReloadFirstEpoch()
    runner = make_runner(tmp_path, max_epochs=3, hooks=[hook],
                         default_hooks={"checkpoint": {"type": "CheckpointHook", "interval": 1}})
    runner.train()
    assert hook.loaded is not None
    assert (runner.epoch, runner.iter) == (3, 24)  # 8 iterations an epoch, none run twice


def test_resume_restores_the_whole_run(tmp_path):
    runner = make_runner(tmp_path, max_epochs=2)
    start = runner.save_checkpoint("start.pth")
    first = {k: v.clone() for k, v in runner.model.state_dict().items()}
    runner.train()
    assert runner.iter == 16
    checkpoint = runner.resume(start)
    assert checkpoint["meta"]["iter"] == 0 and (runner.epoch, runner.iter) == (0, 0)
    assert all(torch.equal(v, first[k]) for k, v in runner.model.state_dict().items())
    with pytest.raises(ConfigError, match=r"resume restores the whole run.*load_checkpoint"):
        runner.resume(start, resume_optimizer=False)


def test_save_checkpoint_takes_mmengines_out_dir_filename_and_meta(tmp_path):
    runner = make_runner(tmp_path / "run", max_epochs=1)
    runner.train()
    out = tmp_path / "exported"
    out.mkdir()
    path = runner.save_checkpoint(out, "final.pth", save_optimizer=False,
                                  save_param_scheduler=False, meta={"note": "hand-made"},
                                  by_epoch=True)
    assert path == out / "final.pth"
    saved = load_checkpoint_file(path)
    assert saved["meta"]["note"] == "hand-made" and saved["meta"]["iter"] == 8
    assert "optimizer" not in saved
    for kwargs, match in (({"file_client_args": {"backend": "petrel"}}, "remote storage"),
                          ({"backend_args": {"backend": "s3"}}, "remote storage"),
                          ({"save_param_scheduler": False}, "must equal save_optimizer"),
                          ({"meta": ["not", "a", "dict"]}, "meta must be a dict")):
        with pytest.raises(ConfigError, match=match):
            runner.save_checkpoint(out, "refused.pth", **kwargs)
    assert not (out / "refused.pth").exists()


def test_mmengines_resume_true_and_false(tmp_path):
    first = make_runner(tmp_path / "a", max_epochs=1,
                        default_hooks={"checkpoint": {"type": "CheckpointHook", "interval": 1}})
    first.train()
    auto = make_runner(tmp_path / "a", max_epochs=2, resume=True)  # the work dir's newest
    auto.train()
    assert auto.iter == 16 and auto.epoch == 2
    from_file = make_runner(tmp_path / "b", max_epochs=2, resume=True,
                            load_from=tmp_path / "a" / "epoch_1.pth")  # MMEngine: resume that
    from_file.train()
    assert from_file.iter == 16
    weights_only = make_runner(tmp_path / "c", max_epochs=1, resume=False,
                               load_from=tmp_path / "a" / "epoch_1.pth")
    weights_only.train()
    assert weights_only.iter == 8  # a fresh run from those weights
    with pytest.raises(ConfigError, match=r"resume must be a checkpoint path, 'auto', True or "
                       r"False, got 1"):
        make_runner(tmp_path / "d", resume=1)



def test_numpy_values_hooks_store_are_saved_as_numbers_and_tensors(tmp_path):
    """MMEngine pickles a hook's ``np.float64`` best score; hookline stores it as a float (and
    an array as a tensor), which ``weights_only`` loads, instead of failing the save."""
    class BestKeeper(Hook):
        def before_save_checkpoint(self, runner, checkpoint):
            checkpoint["meta"]["best"] = np.float64(0.75)
            checkpoint["extra"] = {"history": np.array([0.5, 0.75]), "step": np.int64(3)}

    runner = make_runner(tmp_path, max_epochs=1, hooks=[BestKeeper()])
    runner.train()
    saved = load_checkpoint_file(runner.save_checkpoint("numpy.pth"))
    assert saved["meta"]["best"] == 0.75 and type(saved["meta"]["best"]) is float
    assert torch.equal(saved["extra"]["history"], torch.tensor([0.5, 0.75], dtype=torch.float64))
    assert saved["extra"]["step"] == 3 and type(saved["extra"]["step"]) is int


def test_resuming_with_another_optimizer_type_is_one_clear_error_before_anything_changes(tmp_path):
    """An Adam checkpoint resumed by an SGD run used to load, then fail at the first step
    (SGD's ``momentum`` missing from the loaded groups)."""
    make_runner(tmp_path / "adam", max_epochs=1,
                default_hooks={"checkpoint": {"type": "CheckpointHook", "interval": 1}}).train()
    path = tmp_path / "adam" / "epoch_1.pth"
    runner = make_runner(tmp_path / "sgd", max_epochs=2,
                         optimizer={"type": "SGD", "lr": 0.1, "momentum": 0.9})
    before = {k: v.clone() for k, v in runner.model.state_dict().items()}
    with pytest.raises(CheckpointError, match=r"another optimizer: the checkpoint's holds amsgrad, "
                       r"betas, eps settings, this run's optimizer takes dampening, momentum"):
        runner.resume(path)
    assert all(torch.equal(v, before[k]) for k, v in runner.model.state_dict().items())
    adamw = make_runner(tmp_path / "adamw", max_epochs=2, optimizer={"type": "AdamW", "lr": 0.01})
    adamw.resume(path)  # Adam's and AdamW's states are the same kind: this resumes
    assert adamw.iter == 8


def test_a_resume_says_when_the_runs_optimizer_settings_differ_from_the_saved_ones(tmp_path):
    """``--set optimizer.lr=... --resume auto`` used to be ignored without a word."""
    make_runner(tmp_path, max_epochs=1,
                default_hooks={"checkpoint": {"type": "CheckpointHook", "interval": 1}}).train()
    make_runner(tmp_path, max_epochs=2, resume="auto").train()
    assert "resumed the optimizer as saved" not in (tmp_path / "log.txt").read_text()
    edited = make_runner(tmp_path, max_epochs=3, resume="auto",
                         optimizer={"type": "Adam", "lr": 0.05, "weight_decay": 0.01})
    edited.train()
    assert "resumed the optimizer as saved, with lr 0.01 (not 0.05); weight_decay 0 (not 0.01)" \
        in (tmp_path / "log.txt").read_text()
    assert edited.optimizer.param_groups[0]["weight_decay"] == 0  # the saved value, as said


def test_a_rate_a_callback_lowered_is_not_taken_for_another_configuration(tmp_path):
    """A hook (Keras's ReduceLROnPlateau, mmcv's LrUpdaterHook) that set the rate itself, with
    no scheduler: the resume compares the saved run's configuration with this one's, not the
    rate the hook moved."""
    from torch.utils.data import DataLoader, TensorDataset  # noqa: PLC0415

    def plain(max_epochs: int, **kwargs) -> Runner:
        data = TensorDataset(torch.ones(8, 2), torch.ones(8, 1))
        return Runner(torch.nn.Linear(2, 1), optimizer={"type": "SGD", "lr": 0.1},
                      loss_fn=torch.nn.MSELoss(), train_dataloader=DataLoader(data, batch_size=4),
                      max_epochs=max_epochs, work_dir=str(tmp_path),
                      default_hooks={"progress": None, "logger": None}, **kwargs)

    first = plain(1)
    first.on("after_train_epoch", lambda r: [g.update(lr=g["lr"] / 2)
                                             for g in r.optimizer.param_groups])
    first.train()
    resumed = plain(2, resume="auto")
    resumed.train()
    assert "resumed the optimizer as saved" not in (tmp_path / "log.txt").read_text()
    assert resumed.optimizer.param_groups[0]["lr"] == pytest.approx(0.05)  # as saved
