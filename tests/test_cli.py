"""The ``hookline`` command, run as a real subprocess: help, hooks, train, resume, errors, signals."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from hookline import HOOKS, __version__
from hookline.app.commands import _latest_records, write_training_curves
from hookline.cli import main
from hookline.engine.checkpoint import make_meta, save_atomic

SCRIPT = Path(sys.executable).with_name("hookline")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "hookline.cli"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "120"}

CONFIG = {
    "custom_imports": ["cli_test_parts"],
    "model": {"type": "DigitsCNN"},
    "loss_fn": {"type": "CrossEntropyLoss"},
    "optimizer": {"type": "Adam", "lr": 0.003},
    "param_scheduler": {"type": "StepLR", "step_size": 1, "gamma": 0.5},
    "train_dataloader": {"dataset": {"type": "DigitsDataset", "split": "train"}, "batch_size": 128},
    "val_dataloader": {"dataset": {"type": "DigitsDataset", "split": "val"}, "batch_size": 359},
    "metrics": {"accuracy": "accuracy"},
    "max_epochs": 3,
    "default_hooks": {"logger": {"interval": 4}},
    "hooks": [{"type": "StageMarker", "priority": "HIGHEST"}],
}

PARTS = '''
from hookline import ConfigError, Hook
from hookline.engine.registries import HOOKS


@HOOKS.register(force=True)
class StageMarker(Hook):
    """Marks the start of every training epoch in the log."""

    def before_train_epoch(self, runner):
        runner.logger.info("marker: epoch %d starts", runner.epoch + 1)


@HOOKS.register(force=True)
class NeedsTop5(Hook):
    """A hook that finds a configuration problem only while training."""

    def after_val_epoch(self, runner, metrics=None):
        raise ConfigError(f"NeedsTop5: 'top5' is not among the metrics {sorted(metrics or {})}")
'''


def hookline(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, *args], cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with a config and the module it imports (found because it is in the cwd)."""
    (tmp_path / "cli_test_parts.py").write_text(PARTS)
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    return tmp_path


def assert_clean_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_python_dash_m_hookline_is_the_command(tmp_path):
    result = subprocess.run([sys.executable, "-m", "hookline", "--version"], cwd=tmp_path, env=ENV,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"hookline {__version__}"


def test_help_of_every_command(tmp_path, capsys):
    top = hookline("--help", cwd=tmp_path)
    assert top.returncode == 0
    for name in ("train", "test", "val", "hooks", "inspect", "docs"):
        assert name in top.stdout
    train = hookline("train", "--help", cwd=tmp_path)
    assert train.returncode == 0
    for option in ("CONFIG", "--work-dir", "--resume", "--set", "--test", "--profile-hooks", "--no-curves"):
        assert option in train.stdout
    # the same parser in-process, for the other commands
    assert main(["hooks", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: hookline hooks") and "CONFIG" in out and "--set" in out
    assert main(["inspect", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: hookline inspect")
    assert main(["--version"]) == 0 and capsys.readouterr().out.startswith("hookline ")
    assert main(["trian"]) == 2 and "invalid choice: 'trian'" in capsys.readouterr().err
    assert main([]) == 2 and "required: COMMAND" in capsys.readouterr().err


def test_hooks_lists_every_registered_hook(tmp_path, capsys):
    result = hookline("hooks", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    names = [n for n, cls in HOOKS.items() if getattr(cls, "__module__", "").startswith("hookline.")]
    assert f"{len(names)} hooks registered" in result.stdout
    for name in names:
        assert f"\n{name}  [" in result.stdout
    assert "CheckpointHook  [VERY_LOW (90)]" in result.stdout
    # the same command in-process (no second process start) for its --markdown table
    assert main(["hooks", "--markdown"]) == 0
    assert capsys.readouterr().out.startswith("| hook | priority | stages | arguments |")


def test_hooks_config_prints_the_run_hook_table_without_training(project):
    result = hookline("hooks", "run.yaml", "--set", "default_hooks.progress=null", cwd=project)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(None, 1) for line in result.stdout.strip().splitlines())
    # the config's hook runs first (HIGHEST) at its stage, before the default hooks
    assert lines["before_train_epoch"].startswith("StageMarker(HIGHEST), ")
    assert "CheckpointHook(VERY_LOW)" in lines["after_train_epoch"]
    assert "ProgressBarHook" not in result.stdout
    assert not (project / "work_dirs").exists()


def test_train_config_writes_its_run_dir_and_resumes(project):
    first = hookline("train", "run.yaml", "--set", "max_epochs=1", "--work-dir", "out", "--profile-hooks",
                     cwd=project)
    assert first.returncode == 0, first.stderr
    assert "Traceback" not in first.stderr
    [out] = [p for p in (project / "out").iterdir() if p.is_dir()]  # out/<timestamp>
    assert (project / "out" / "last_run").read_text() == f"{out.name}\n"
    run_dir = f"out/{out.name}"
    last_lines = first.stdout.strip().splitlines()[-2:]
    assert last_lines[0].startswith("trained 1/1 epochs (12 iterations) in ")
    assert "final validation: loss " in last_lines[0] and "accuracy " in last_lines[0]
    assert last_lines[1].startswith(f"outputs in {run_dir}: config.yaml, log.txt, metrics.jsonl, "
                                    "checkpoints (epoch_1.pth), curves.png")
    # --profile-hooks: a table of (hook, stage, calls, total ms)
    profile = first.stdout.split("hook profile", 1)[1]
    assert "LoggerHook" in profile and "after_train_iter" in profile and "total ms" in profile
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved["max_epochs"] == 1 and saved["work_dir"] == "out"  # where runs go: trains a new one
    assert saved["hooks"] == CONFIG["hooks"]
    assert "marker: epoch 1 starts" in (out / "log.txt").read_text()
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["mode"] for r in records][-1] == "val"

    second = hookline("train", "run.yaml", "--set", "max_epochs=2", "--work-dir", "out", "--resume", "auto",
                      cwd=project)
    assert second.returncode == 0, second.stderr
    assert [p for p in (project / "out").iterdir() if p.is_dir()] == [out]  # the same run, resumed
    log = (out / "log.txt").read_text()
    assert "resumed from" in log and "epoch_1.pth" in log.split("resumed from", 1)[1].splitlines()[0]
    assert "marker: epoch 2 starts" in log and log.count("marker: epoch 1 starts") == 1
    assert second.stdout.strip().splitlines()[-2].startswith("trained 2/2 epochs (24 iterations)")
    meta = torch.load(out / "epoch_2.pth", weights_only=True)["meta"]
    assert meta["epoch"] == 2 and meta["iter"] == 24
    assert meta["config"]["max_epochs"] == 2 and meta["config"]["resume"] == "auto"
    # the StepLR schedule continued from the checkpoint: 0.003 * 0.5 ** 2 after two epochs
    state = torch.load(out / "epoch_2.pth", weights_only=True)
    assert state["optimizer"]["param_groups"][0]["lr"] == pytest.approx(0.003 * 0.25)


def test_a_config_error_exits_2_with_one_line(project):
    result = hookline("train", "run.yaml", "--set", "optimizer.type=Adamm", cwd=project)
    assert_clean_error(result, "optimizer: unknown optimizer type 'Adamm'; did you mean 'Adam'")
    assert not (project / "work_dirs").exists() and not result.stdout


@pytest.mark.parametrize("args, fragments", [
    (["train", "run.yaml", "--set", "optimizer.type=Adamm"],
     ["optimizer: unknown optimizer type 'Adamm'; did you mean 'Adam'"]),
    (["train", "run.yaml", "--set", "hooks[0].colour=red"],
     ["hooks[0]: hook type 'StageMarker' got unexpected argument(s) 'colour'"]),
    (["train", "run.yaml", "--set", "max_epoch=2"],
     ["unknown top-level config key 'max_epoch'; did you mean 'max_epochs'"]),
    (["train", "missing.yaml"], ["config file 'missing.yaml' not found"]),
    (["train", "run.yaml", "--set", "lr"], ["--set expects KEY=VALUE"]),
    (["hooks", "run.yaml", "--set", "default_hooks.checkpoint.save_best=nope"],
     ["cannot infer whether 'nope'"]),  # raised while the hook is built
    (["hooks", "--set", "max_epochs=1"], ["--set applies to a CONFIG"]),
])
def test_config_errors_are_one_line_and_exit_2(project, args, fragments, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code = main(args)
    assert_clean_error(subprocess.CompletedProcess(args, code, "", capsys.readouterr().err), *fragments)
    assert not (project / "work_dirs").exists()


def test_a_file_that_is_not_a_checkpoint_is_one_line_too(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    (project / "broken.pth").write_bytes(b"not a checkpoint")
    code = main(["train", "run.yaml", "--resume", "broken.pth", "--work-dir", "out"])
    assert_clean_error(subprocess.CompletedProcess([], code, "", capsys.readouterr().err), "broken.pth")


def test_resuming_another_models_checkpoint_is_one_line_too(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    save_atomic({"meta": make_meta(epoch=1, iteration=12),
                 "state_dict": torch.nn.Linear(64, 10).state_dict()}, project / "other.pth")
    code = main(["train", "run.yaml", "--resume", "other.pth", "--work-dir", "out"])
    assert_clean_error(subprocess.CompletedProcess([], code, "", capsys.readouterr().err),
                       "cannot load checkpoint 'other.pth': does not fit this run: another model")


def test_resume_auto_over_checkpoints_none_of_which_fits_is_one_line(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    assert main(["train", "run.yaml", "--set", "max_epochs=1", "--work-dir", "out"]) == 0
    before = {p.name: p.read_bytes() for p in (project / "out").glob("*/*.pth")}
    [run_dir] = (project / "out").glob("2*")
    code = main(["train", "run.yaml", "--set", "model.num_classes=5", "--resume", "auto",
                 "--work-dir", "out"])
    assert_clean_error(subprocess.CompletedProcess([], code, "", capsys.readouterr().err),
                       f"cannot resume from 'out/{run_dir.name}': resume='auto' found",
                       "nothing was deleted")
    assert {p.name: p.read_bytes() for p in (project / "out").glob("*/*.pth")} == before


def test_a_config_error_inside_a_hook_during_training_is_one_line_too(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code = main(["train", "run.yaml", "--set", "max_epochs=1", "--set", "train_dataloader.batch_size=512",
                 "--set", "hooks=[{type: NeedsTop5}]", "--work-dir", "out"])
    assert_clean_error(subprocess.CompletedProcess([], code, "", capsys.readouterr().err),
                       "NeedsTop5", "top5")


def test_an_unknown_save_best_metric_is_one_line_before_training(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code = main(["train", "run.yaml", "--set", "default_hooks.checkpoint.save_best=top5",
                 "--work-dir", "out"])
    assert_clean_error(subprocess.CompletedProcess([], code, "", capsys.readouterr().err),
                       "default_hooks.checkpoint.save_best", "top5", "accuracy")
    assert not (project / "out").exists()  # checked before anything was written


def test_sigint_saves_a_checkpoint_and_exits_130_without_a_traceback(project):
    shutil.rmtree(project / "out", ignore_errors=True)
    process = subprocess.Popen(
        [*COMMAND, "train", "run.yaml", "--set", "max_epochs=500", "--set", "default_hooks.logger.interval=1",
         "--work-dir", "out"], cwd=project, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and process.poll() is None:
        metrics = next((project / "out").glob("*/metrics.jsonl"), None)
        if metrics is not None and metrics.read_text().count("\n") >= 2:
            break
        time.sleep(0.1)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGINT
    assert "Traceback" not in stderr and "Traceback" not in stdout
    assert "stopped by SIGINT" in stdout and "--resume auto" in stdout
    [run_dir] = (project / "out").glob("2*")
    saved = sorted(p.name for p in run_dir.glob("iter_*.pth"))
    assert len(saved) == 1
    assert "trained" not in stdout  # no success line for an interrupted run
    assert (run_dir / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # drawn all the same


def test_training_curves_keep_the_last_record_of_each_iteration(tmp_path):
    run = [{"mode": "train", "epoch": 1, "iter": i, "lr": 0.1, "loss": 2.0 / i} for i in (2, 4)]
    run.append({"mode": "val", "epoch": 1, "iter": 4, "loss": 0.6, "accuracy": 0.7})
    rerun = [{**r, "loss": r["loss"] / 2} for r in run]  # a new run into the same work dir
    records = _latest_records(run + rerun)
    assert [(r["mode"], r["iter"], r["loss"]) for r in records] == [
        ("train", 2, 0.5), ("train", 4, 0.25), ("val", 4, 0.3)]
    assert list(records[0]) == ["mode", "epoch", "iter", "loss", "lr"]

    assert "no " in write_training_curves(tmp_path)  # no metrics.jsonl: a note, no file
    assert not (tmp_path / "curves.png").exists()
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in run + rerun))
    assert write_training_curves(tmp_path) is None
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
