"""``hookline train`` under a command-line user's mishaps: Ctrl-C while starting, a second
Ctrl-C, output piped into ``head``, two runs resuming one folder, a refused resume, and
the one-line messages for wrong arguments. Real subprocesses and real signals where the
behaviour is about signals or pipes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from hookline.app import run_dirs
from hookline.cli import main

from .test_cli import COMMAND, CONFIG, ENV

PARTS = '''
import os, time
from pathlib import Path
from hookline import Hook
from hookline.engine.registries import HOOKS


@HOOKS.register(force=True)
class SlowVal(Hook):
    """Validation number SLOW_VAL (1-based) writes the file 'in_val' and sleeps 3 s."""

    def __init__(self):
        self.count = 0

    def before_val_epoch(self, runner):
        self.count += 1
        if self.count == int(os.environ.get("SLOW_VAL", "0")):
            Path("in_val").touch()
            time.sleep(3)


@HOOKS.register(force=True)
class Boom(Hook):
    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        raise RuntimeError("boom at iteration 2")
'''

#: imports hookline.cli and sends itself SIGINT at the first import of numpy (torch's C
#: extension imports it, and drops a KeyboardInterrupt raised there)
SIGINT_WHILE_IMPORTING = '''
import os, signal, sys
hit = []
def hook(event, args):
    if event == "import" and not hit and str(args[0]).startswith("numpy"):
        hit.append(args[0])
        os.kill(os.getpid(), signal.SIGINT)
sys.addaudithook(hook)
from hookline.cli import main
code = main(sys.argv[1:])
sys.stderr.write(f"signalled at {hit}\\n")
sys.exit(code)
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with a quick config (one epoch of a few batches) and its hooks module."""
    (tmp_path / "robust_parts.py").write_text(PARTS)
    config = {**CONFIG, "custom_imports": ["robust_parts"], "hooks": [], "max_epochs": 1}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return tmp_path


def _error_of(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def _wait_for(path: Path, process: subprocess.Popen, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.02)


# -- signals and pipes (subprocesses) -----------------------------------------------------------
def test_ctrl_c_while_the_command_imports_stops_it_with_130(project):
    result = subprocess.run([sys.executable, "-c", SIGINT_WHILE_IMPORTING, "train", "run.yaml",
                             "--work-dir", "out", "--no-curves"], cwd=project, env=ENV,
                            capture_output=True, text=True, timeout=120)
    assert "signalled at ['numpy" in result.stderr, result.stderr
    assert result.returncode == 130, result.stderr
    assert "interrupted while starting: nothing was run" in result.stderr
    assert "Traceback" not in result.stderr and not (project / "out").exists()


def _read_until(process: subprocess.Popen, text: str) -> str:
    """The first stderr line holding ``text`` ("" when stderr ends first)."""
    assert process.stderr is not None
    for line in process.stderr:
        if text in line:
            return line
    return ""


def _start_slow_run(project: Path, slow_val: int, epochs: int) -> subprocess.Popen:
    return subprocess.Popen(
        [*COMMAND, "train", "run.yaml", "--work-dir", "out", "--set", f"max_epochs={epochs}",
         "--set", "hooks=[{type: SlowVal}]", "--no-curves"], cwd=project,
        env={**ENV, "SLOW_VAL": str(slow_val)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)


def test_the_first_signal_is_acknowledged_at_once_and_the_hint_is_the_real_command(project):
    process = _start_slow_run(project, slow_val=1, epochs=2)
    _wait_for(project / "in_val", process)
    process.send_signal(signal.SIGINT)
    ack = _read_until(process, "SIGINT received")
    assert process.poll() is None  # said at once: the validation sleeps 3 s more
    assert "saving a checkpoint" in ack and "Ctrl-C again stops at once without saving" in ack
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in stderr
    assert ("Resume with: hookline train run.yaml --work-dir out --set max_epochs=2 --set "
            "'hooks=[{type: SlowVal}]' --no-curves --resume auto") in stdout


def test_a_second_ctrl_c_says_no_checkpoint_was_saved_names_the_last_and_logs_it(project):
    process = _start_slow_run(project, slow_val=2, epochs=3)  # epoch_1.pth is saved by then
    _wait_for(project / "in_val", process)
    process.send_signal(signal.SIGINT)
    assert _read_until(process, "SIGINT received")
    process.send_signal(signal.SIGINT)
    assert process.stderr is not None
    stderr = process.stderr.read()  # what the ack's reading buffered is here, too
    process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in stderr
    [run_dir] = (project / "out").glob("2*")
    said = [line for line in stderr.splitlines() if "stopping at once" in line]
    assert said and "no checkpoint saved" in said[0]
    assert f"the last checkpoint is out/{run_dir.name}/epoch_1.pth" in said[0]
    log = (run_dir / "log.txt").read_text()
    assert "ERROR - train interrupted (Ctrl-C): stopped at once, no checkpoint saved" in log
    assert not list(run_dir.glob("iter_*.pth"))


def test_output_piped_into_head_detaches_the_console_quietly(project):
    process = subprocess.Popen(
        [*COMMAND, "train", "run.yaml", "--work-dir", "out", "--set", "default_hooks.logger.interval=1",
         "--no-curves"], cwd=project, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline()
    process.stdout.close()  # as head does after its lines
    _, stderr = process.communicate(timeout=120)
    assert b"Logging error" not in stderr and b"Traceback" not in stderr, stderr.decode()[-2000:]
    assert process.returncode == 1  # as hookline hooks | head: the output was cut short
    [run_dir] = (project / "out").glob("2*")
    assert "Epoch(val) [1]" in (run_dir / "log.txt").read_text()  # log.txt went on
    assert (run_dir / "epoch_1.pth").is_file()


# -- the work dir: last_run and the run lock (in process) ---------------------------------------
def test_a_refused_resume_leaves_last_run_as_it_was(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    assert main(["train", "run.yaml", "--work-dir", "out", "--no-curves"]) == 0
    assert main(["train", "run.yaml", "--work-dir", "out", "--no-curves"]) == 0
    old, new = sorted((project / "out").glob("2*"))
    before = (project / "out" / run_dirs.LAST_RUN_FILE).read_text()
    assert before == f"{new.name}\n"
    code = main(["train", "run.yaml", "--work-dir", "out", "--resume", f"out/{old.name}/epoch_1.pth",
                 "--set", "model.num_classes=5"])
    assert code == 2 and "does not fit this run" in _error_of(capsys)
    assert (project / "out" / run_dirs.LAST_RUN_FILE).read_text() == before
    assert "ERROR" not in (old / "log.txt").read_text()  # the refused run's log is untouched


def test_a_run_folder_in_use_is_refused_naming_the_holder(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    assert main(["train", "run.yaml", "--work-dir", "out", "--no-curves"]) == 0
    [run_dir] = (project / "out").glob("2*")
    before = sorted(p.name for p in run_dir.iterdir())
    holder = subprocess.Popen(  # another training process holding the run folder
        [sys.executable, "-c", "import sys, time; from hookline.app.run_dirs import "
         "lock_run_dir; lock = lock_run_dir(sys.argv[1]); print('held', flush=True); "
         "time.sleep(60)", str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code = main(["train", "run.yaml", "--work-dir", "out", "--resume", "auto",
                     "--set", "max_epochs=2", "--no-curves"])
        message = _error_of(capsys)
    finally:
        holder.kill()
        holder.wait()
    (run_dir / run_dirs.RUN_LOCK_FILE).unlink()  # what the killed holder left behind
    assert code == 2 and f"folder 'out/{run_dir.name}' is in use by another hookline train" in message
    assert f"pid {holder.pid} " in message
    assert sorted(p.name for p in run_dir.iterdir()) == before  # nothing written
    assert main(["train", "run.yaml", "--work-dir", "out", "--resume", "auto",
                 "--set", "max_epochs=2", "--no-curves"]) == 0  # free again
    assert not (run_dir / run_dirs.RUN_LOCK_FILE).exists()  # released and removed after training


# -- one-line messages --------------------------------------------------------------------------
def test_resume_from_the_latest_pointer_or_a_run_folder_says_what_to_pass(project, capsys,
                                                                         monkeypatch):
    monkeypatch.chdir(project)
    assert main(["train", "run.yaml", "--work-dir", "out", "--no-curves"]) == 0
    [run_dir] = (project / "out").glob("2*")
    run = f"out/{run_dir.name}"
    assert main(["train", "run.yaml", "--work-dir", "out", "--resume", f"{run}/latest"]) == 2
    message = _error_of(capsys)
    assert "is the 'latest' pointer file, not a checkpoint" in message
    assert f"{run}/epoch_1.pth" in message and "IndexError" not in message
    assert main(["train", "run.yaml", "--work-dir", "out", "--resume", run]) == 2
    message = _error_of(capsys)
    assert f"--resume '{run}' is a folder, not a checkpoint file" in message
    assert "accepted: auto" in message and f"{run}/epoch_1.pth" in message


@pytest.mark.parametrize(("name", "text", "fragment"), [
    ("run.json", "model: {type: DigitsCNN}\n", "as JSON (a .json file must hold JSON"),
    ("empty.yaml", "\n  \n", "config file 'empty.yaml' is empty"),
])
def test_a_config_file_that_does_not_parse_says_why(project, capsys, monkeypatch, name, text,
                                                    fragment):
    monkeypatch.chdir(project)
    (project / name).write_text(text)
    assert main(["train", name]) == 2
    assert fragment in _error_of(capsys)


def test_an_empty_work_dir_is_an_error_not_the_default(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    assert main(["train", "run.yaml", "--work-dir", ""]) == 2
    assert "--work-dir is empty" in _error_of(capsys)
    assert not (project / "work_dirs").exists()


def test_an_unknown_option_after_the_subcommand_shows_its_usage(capsys):
    assert main(["train", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: hookline train ")
    assert "hookline train: error: unrecognized arguments: --bogus" in err


def test_a_failing_hook_is_in_log_txt(project, monkeypatch):
    monkeypatch.chdir(project)
    with pytest.raises(Exception, match="boom at iteration 2"):
        main(["train", "run.yaml", "--work-dir", "out", "--set", "hooks=[{type: Boom}]",
              "--no-curves"])
    [run_dir] = (project / "out").glob("2*")
    log = (run_dir / "log.txt").read_text()
    assert "ERROR - train failed: HookError: " in log and "RuntimeError: boom at iteration 2" in log
    assert "Traceback (most recent call last)" in log


def test_yes_is_not_a_boolean_so_shuffle_yes_is_an_error(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    assert main(["train", "run.yaml", "--set", "train_dataloader.shuffle=yes"]) == 2
    assert "train_dataloader.shuffle must be true or false, got 'yes'" in _error_of(capsys)
    assert not (project / "work_dirs").exists()
