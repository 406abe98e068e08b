"""A new training run never replaces the file it loads its weights from, nor a file in its
checkpoint folder that is not hookline's: one ConfigError before anything is written."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner
from hookline.engine.checkpoint.own_files import is_hookline_file
from hookline.hooks import CheckpointLoaderHook


def data() -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(32, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


def runner(work_dir: Path, epochs: int = 2, keep: int = -1, **kwargs) -> Runner:
    torch.manual_seed(0)
    hooks = {"progress": None, "logger": None,
             "checkpoint": {"type": "CheckpointHook", "max_keep_ckpts": keep,
                            **kwargs.pop("checkpoint", {})}}
    return Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(data(), batch_size=8), max_epochs=epochs,
                  work_dir=work_dir, default_hooks=hooks, **kwargs)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: Path) -> dict[str, str]:
    return {p.name: digest(p) for p in sorted(folder.iterdir()) if p.is_file()}


def test_fine_tuning_from_a_checkpoint_into_its_own_work_dir_is_refused(tmp_path):
    runner(tmp_path, epochs=3).train()
    before = listing(tmp_path)
    source = tmp_path / "epoch_3.pth"
    with pytest.raises(ConfigError) as caught:
        runner(tmp_path, epochs=3, keep=1, load_from=source).train()
    message = str(caught.value)
    assert f"load_from {str(source)!r}" in message and "epoch_3.pth" in message
    assert "Copy or move it out" in message and "resume=" in message
    assert listing(tmp_path) == before  # nothing replaced, deleted or added (no log.txt either)


def test_pretrained_weights_named_like_a_checkpoint_are_never_overwritten_then_deleted(tmp_path):
    torch.save(torch.nn.Linear(4, 2).state_dict(), tmp_path / "epoch_1.pth")
    before = listing(tmp_path)
    with pytest.raises(ConfigError, match=r"load_from .*epoch_1\.pth.* under a name they take"):
        runner(tmp_path, keep=1, load_from=tmp_path / "epoch_1.pth").train()
    assert listing(tmp_path) == before


def test_the_same_weights_outside_the_checkpoint_folder_fine_tune_as_before(tmp_path):
    first = tmp_path / "first"
    runner(first, epochs=3).train()
    pretrained = tmp_path / "pretrained.pth"
    pretrained.write_bytes((first / "epoch_3.pth").read_bytes())
    kept = digest(pretrained)
    tuned = runner(tmp_path / "second", epochs=2, keep=1, load_from=pretrained)
    tuned.train()
    assert tuned.epoch == 2 and digest(pretrained) == kept
    assert sorted(p.name for p in (tmp_path / "second").glob("*.pth")) == ["epoch_2.pth"]
    # a differently named file in the same work dir: loaded, and left alone
    (first / "best_weights.pth").write_bytes((first / "epoch_3.pth").read_bytes())
    runner(first, epochs=1, load_from=first / "best_weights.pth").train()
    assert digest(first / "best_weights.pth") == kept


def test_user_files_named_latest_and_epoch_1_pth_are_refused_by_name(tmp_path):
    (tmp_path / "latest").write_text("my notes about the latest experiment\n")
    (tmp_path / "epoch_1.pth").write_text("my own file\n")
    before = listing(tmp_path)
    with pytest.raises(ConfigError) as caught:
        runner(tmp_path).train()
    message = str(caught.value)
    assert str(tmp_path / "latest") in message and str(tmp_path / "epoch_1.pth") in message
    assert "not hookline's" in message and "move or rename them" in message
    assert listing(tmp_path) == before


def test_a_plain_state_dict_named_epoch_1_pth_is_not_replaced(tmp_path):
    torch.save(torch.nn.Linear(4, 2).state_dict(), tmp_path / "epoch_1.pth")
    before = listing(tmp_path)
    with pytest.raises(ConfigError, match=r"epoch_1\.pth' is not hookline's"):
        runner(tmp_path).train()
    assert listing(tmp_path) == before


def test_an_earlier_runs_checkpoints_are_still_replaced_with_the_warning(tmp_path):
    runner(tmp_path, epochs=2).train()
    assert is_hookline_file(tmp_path / "epoch_1.pth") and is_hookline_file(tmp_path / "latest")
    first = digest(tmp_path / "epoch_2.pth")
    again = runner(tmp_path, epochs=2, checkpoint={"max_keep_ckpts": 1})
    again.train()
    assert "already holds checkpoints of an earlier run" in (tmp_path / "log.txt").read_text()
    assert again.epoch == 2 and digest(tmp_path / "epoch_2.pth") != first
    assert not (tmp_path / "epoch_1.pth").exists()  # the new run's own, deleted by keep-N


def test_a_checkpoint_hooks_out_dir_and_filename_tmpl_are_checked_too(tmp_path):
    out = tmp_path / "out"
    (out / "run").mkdir(parents=True)
    (out / "run" / "ckpt_1.pth").write_text("not a checkpoint")
    with pytest.raises(ConfigError, match=r"ckpt_1\.pth' is not hookline's"):
        runner(tmp_path / "run", checkpoint={"out_dir": str(out),
                                             "filename_tmpl": "ckpt_{}.pth"}).train()
    assert (out / "run" / "ckpt_1.pth").read_text() == "not a checkpoint"


def test_a_checkpoint_loader_hooks_file_is_protected_as_load_from(tmp_path):
    torch.save(torch.nn.Linear(4, 2).state_dict(), tmp_path / "iter_4.pth")
    before = listing(tmp_path)
    with pytest.raises(ConfigError, match="CheckpointLoaderHook's path"):
        runner(tmp_path, hooks=[CheckpointLoaderHook(tmp_path / "iter_4.pth")]).train()
    after = listing(tmp_path)
    after.pop("log.txt")  # the hook logs what it loaded in before_run
    assert after == before


def test_resume_auto_starting_fresh_checks_the_same(tmp_path):
    (tmp_path / "latest").write_text("notes\nmore notes\n")
    with pytest.raises(Exception, match="latest"):
        runner(tmp_path, resume="auto").train()
    assert (tmp_path / "latest").read_text() == "notes\nmore notes\n"
