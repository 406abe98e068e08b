"""Run folders: every ``hookline train`` run in its own folder, resume in place, nothing overwritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hookline import Hook
from hookline.app import build_runner, load_config
from hookline.app.run_dirs import (
    LAST_RUN_FILE,
    has_checkpoints,
    is_run_dir_name,
    last_run_with_checkpoints,
    new_run_dir,
    read_last_run,
    run_dirs,
    write_last_run,
)
from hookline.cli import main
from hookline.demo.registry import demo_config_path
from hookline.engine.registries import HOOKS

QUIET = ["--set", "default_hooks.progress=null", "--set", "default_hooks.logger.interval=45"]


def train(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``hookline train`` in this process on the demo; its stdout."""
    code = main(["train", *args, *QUIET])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# -- the module ---------------------------------------------------------------------------------------
def test_runs_started_in_the_same_second_get_their_own_folders(tmp_path):
    made = [new_run_dir(tmp_path, now=1_800_000_000.0) for _ in range(11)]
    names = [p.name for p in made]
    assert len(set(names)) == 11 and names[1] == names[0] + "_2" and names[10] == names[0] + "_11"
    assert all(p.is_dir() and is_run_dir_name(p.name) for p in made)
    later = new_run_dir(tmp_path, now=1_800_000_001.0)
    assert run_dirs(tmp_path) == [*made, later]  # _11 sorts after _2, by time first
    assert read_last_run(tmp_path) == later
    assert (tmp_path / LAST_RUN_FILE).read_text() == later.name + "\n"
    # not made: only the name (the other processes of a multi-process run)
    assert not new_run_dir(tmp_path / "other", now=0.0, create=False).exists()


def test_last_run_with_checkpoints_prefers_the_pointer_then_the_newest_then_a_flat_work_dir(tmp_path):
    assert last_run_with_checkpoints(tmp_path / "missing") is None
    (tmp_path / "epoch_1.pth").write_bytes(b"0.1 layout")
    assert has_checkpoints(tmp_path) and last_run_with_checkpoints(tmp_path) == tmp_path
    old = new_run_dir(tmp_path, now=1_800_000_000.0)
    new = new_run_dir(tmp_path, now=1_800_000_100.0)
    assert last_run_with_checkpoints(tmp_path) == tmp_path  # neither run wrote a checkpoint yet
    (old / "best_accuracy_epoch_2.pth").write_bytes(b"x")
    assert last_run_with_checkpoints(tmp_path) == old
    (new / "latest").write_text("iter_5.pth\n")
    assert last_run_with_checkpoints(tmp_path) == new
    write_last_run(tmp_path, old)  # `old` was resumed after `new` ran: it is the last run
    assert last_run_with_checkpoints(tmp_path) == old
    write_last_run(tmp_path, tmp_path)
    assert (tmp_path / LAST_RUN_FILE).read_text() == ".\n" and read_last_run(tmp_path) == tmp_path
    with pytest.raises(ValueError, match="not inside the work dir"):
        write_last_run(tmp_path / "a", tmp_path)
    for bad in ("../elsewhere", "/etc", "", "gone"):
        (tmp_path / LAST_RUN_FILE).write_text(bad + "\n")
        assert read_last_run(tmp_path) is None, bad


# -- hookline train -----------------------------------------------------------------------------------
def test_a_second_run_never_touches_the_first_and_resume_auto_continues_the_last(tmp_path, capsys):
    work_dir = tmp_path / "out"
    first_out = train(capsys, "--work-dir", str(work_dir), "--set", "max_epochs=2",
                      "--set", "default_hooks.checkpoint.max_keep_ckpts=1")
    [first] = run_dirs(work_dir)
    assert f"outputs in {first}: config.yaml, log.txt, metrics.jsonl, checkpoints (" in first_out
    assert {"config.yaml", "log.txt", "metrics.jsonl", "curves.png", "latest", "epoch_2.pth"} \
        <= set(snapshot(first))
    # the saved config names the folder runs go into: training it again makes a new run beside
    assert load_config(first / "config.yaml")["work_dir"] == str(work_dir)
    assert torch.load(first / "epoch_2.pth", weights_only=True)["meta"]["config"]["work_dir"] \
        == str(work_dir)
    before = snapshot(first)

    # run 2: same work dir, more epochs, keep-1 deletes its own epoch_1/epoch_2, never run 1's
    train(capsys, "--work-dir", str(work_dir), "--set", "max_epochs=3",
          "--set", "default_hooks.checkpoint.max_keep_ckpts=1")
    assert len(run_dirs(work_dir)) == 2
    second = run_dirs(work_dir)[1]
    assert snapshot(first) == before  # byte for byte, log and metrics included
    assert "epoch_3.pth" in snapshot(second) and "epoch_2.pth" not in snapshot(second)
    assert read_last_run(work_dir) == second
    log = (second / "log.txt").read_text()
    assert f"the last run is in {first}" in log and "already holds checkpoints" not in log

    # --resume auto: the last run, in its own folder, from its newest checkpoint
    resumed = train(capsys, "--work-dir", str(work_dir), "--resume", "auto", "--set", "max_epochs=4",
                    "--set", "default_hooks.checkpoint.max_keep_ckpts=1")
    assert run_dirs(work_dir) == [first, second] and read_last_run(work_dir) == second
    assert "trained 4/4 epochs (180 iterations)" in resumed
    log = (second / "log.txt").read_text()
    assert "resumed from" in log and "epoch_3.pth" in log.split("resumed from", 1)[1].splitlines()[0]
    assert torch.load(second / "epoch_4.pth", weights_only=True)["meta"]["iter"] == 180
    assert "epoch_3.pth" not in snapshot(second)  # keep-1 went on in the resumed run's folder
    assert snapshot(first) == before

    # --resume PATH in run 1: run 1 goes on in its folder
    train(capsys, "--work-dir", str(work_dir), "--resume", str(first / "epoch_2.pth"),
          "--set", "max_epochs=3")
    assert run_dirs(work_dir) == [first, second] and read_last_run(work_dir) == first
    assert (first / "epoch_3.pth").is_file() and (first / "epoch_2.pth").read_bytes() == \
        before["epoch_2.pth"]


def test_a_flat_work_dir_of_hookline_0_1_still_resumes_in_place(tmp_path, capsys):
    flat = tmp_path / "flat"
    runner = build_runner(demo_config_path(), work_dir=flat, overrides=[
        "max_epochs=1", "default_hooks.progress=null", "default_hooks.logger.interval=45"])
    runner.train()
    capsys.readouterr()
    assert (flat / "epoch_1.pth").is_file() and run_dirs(flat) == []
    out = train(capsys, "--work-dir", str(flat), "--resume", "auto", "--set", "max_epochs=2")
    assert "trained 2/2 epochs (90 iterations)" in out
    assert (flat / "epoch_2.pth").is_file() and run_dirs(flat) == []
    assert read_last_run(flat) == flat
    # a fresh run beside it goes into a run folder and leaves the flat files alone
    before = snapshot(flat)
    train(capsys, "--work-dir", str(flat), "--set", "max_epochs=1")
    assert len(run_dirs(flat)) == 1 and snapshot(flat) == {**before, LAST_RUN_FILE: b"%s\n" % (
        run_dirs(flat)[0].name.encode())}


def test_the_runner_warns_when_a_new_run_starts_over_earlier_checkpoints(tmp_path, capsys):
    overrides = ["max_epochs=1", "default_hooks.progress=null", "default_hooks.logger.interval=45"]
    build_runner(demo_config_path(), work_dir=tmp_path, overrides=overrides).train()
    assert "already holds checkpoints" not in (tmp_path / "log.txt").read_text()
    build_runner(demo_config_path(), work_dir=tmp_path, overrides=overrides).test()  # no training
    assert "already holds checkpoints" not in (tmp_path / "log.txt").read_text()
    build_runner(demo_config_path(), work_dir=tmp_path, resume="auto",
                 overrides=[*overrides[1:], "max_epochs=2"]).train()
    assert "already holds checkpoints" not in (tmp_path / "log.txt").read_text()
    build_runner(demo_config_path(), work_dir=tmp_path, overrides=overrides).train()
    warnings = [line for line in (tmp_path / "log.txt").read_text().splitlines()
                if "already holds checkpoints" in line]
    assert len(warnings) == 1 and " - WARNING - " in warnings[0]
    assert str(tmp_path) in warnings[0] and "resume='auto'" in warnings[0]
    assert "adds its records to the same metrics.jsonl" in warnings[0]
    # no checkpoints, but the metrics of an earlier run: the new records would mix with them
    quiet = tmp_path / "no_checkpoints"
    for _ in range(2):
        build_runner(demo_config_path(), work_dir=quiet,
                     overrides=[*overrides, "default_hooks.checkpoint=null"]).train()
    mixed = [line for line in (quiet / "log.txt").read_text().splitlines()
             if "already holds the metrics.jsonl of an earlier run" in line]
    assert len(mixed) == 1 and " - WARNING - " in mixed[0]
    capsys.readouterr()


@HOOKS.register(force=True)
class FailsMidway(Hook):
    """Raises in the second epoch, like a bug in user code."""

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        if runner.iter == 60:
            raise RuntimeError("boom at iteration 60")


def test_curves_are_drawn_for_a_run_that_fails(tmp_path, capsys):
    with pytest.raises(Exception, match="boom at iteration 60"):
        main(["train", "--work-dir", str(tmp_path), "--set", "max_epochs=3",
              "--set", "hooks=[{type: FailsMidway}]", "--set", "default_hooks.progress=null",
              "--set", "default_hooks.logger.interval=15"])
    [run] = run_dirs(tmp_path)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert 30 <= records[-1]["iter"] <= 60
    assert (run / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "trained" not in capsys.readouterr().out  # no success line


BAD_OPTIMIZERS = '''
import torch

from hookline.engine.registries import MODELS


@MODELS.register(force=True)
class NoOptimizer(torch.nn.Module):
    """A Lightning-style module whose configure_optimizers() returns something unusable."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.net(x.flatten(1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return "adam please"
'''


def test_a_run_whose_runner_cannot_be_built_leaves_no_folder_behind(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad_optim.py").write_text(BAD_OPTIMIZERS)
    cfg = load_config(demo_config_path())
    cfg.pop("optimizer")
    cfg.pop("param_scheduler", None)
    cfg["custom_imports"] = ["bad_optim"]
    cfg["model"] = {"type": "NoOptimizer"}
    cfg.pop("loss_fn", None)
    config = tmp_path / "bad.json"
    config.write_text(json.dumps(cfg))
    work = tmp_path / "work"
    first = train(capsys, "--work-dir", str(work), "--set", "max_epochs=1")
    assert "trained 1/1 epochs" in first
    (good,) = run_dirs(work)
    code = main(["train", str(config), "--work-dir", str(work), *QUIET])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "configure_optimizers" in err
    assert run_dirs(work) == [good] and read_last_run(work) == good


def test_a_resume_that_fails_changes_no_file_of_the_run_and_leaves_no_new_folder(tmp_path, capsys):
    """A resume refused by the checkpoints (another optimizer, another model) is one error
    line; the run's config.yaml stays as it was. A --resume file that is no checkpoint leaves
    no new run folder behind and last_run where it was."""
    work_dir = tmp_path / "out"
    train(capsys, "--work-dir", str(work_dir), "--set", "max_epochs=1")
    [run] = run_dirs(work_dir)
    config = (run / "config.yaml").read_bytes()
    for change in (["--set", "optimizer.type=SGD", "--set", "optimizer.momentum=0.9"],
                   ["--set", "model.num_classes=12"]):
        code = main(["train", "--work-dir", str(work_dir), "--resume", "auto",
                     "--set", "max_epochs=2", *change, *QUIET])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and err.startswith("error: cannot resume"), err
        assert (run / "config.yaml").read_bytes() == config
    not_a_checkpoint = tmp_path / "notes.pth"
    not_a_checkpoint.write_text("not a checkpoint")
    code = main(["train", "--work-dir", str(work_dir), "--resume", str(not_a_checkpoint), *QUIET])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: cannot load checkpoint"), err
    assert run_dirs(work_dir) == [run] and read_last_run(work_dir) == run


def test_a_run_a_hook_refuses_before_training_leaves_no_work_dir(tmp_path, capsys):
    work_dir = tmp_path / "new"
    code = main(["train", "--work-dir", str(work_dir), "--set",
                 "param_scheduler={type: OneCycleLR, max_lr: 0.01, total_steps: 10, by_epoch: false}",
                 *QUIET])
    err = capsys.readouterr().err
    assert code == 2 and "total_steps is 10" in err and not work_dir.exists()
