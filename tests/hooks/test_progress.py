"""ProgressBarHook on real runs: a tqdm bar when asked or on a terminal, silence otherwise."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from hookline import HOOKS, ConfigError
from hookline.hooks import ProgressBarHook

from ..engine.toy import make_runner


class Terminal(io.StringIO):
    """A captured stream that says it is an interactive terminal."""

    def isatty(self) -> bool:
        return True


def run(work_dir: Path, hook: ProgressBarHook, **kwargs) -> None:
    make_runner(work_dir, max_epochs=2,
                default_hooks={"progress": hook, "checkpoint": None,
                               "logger": {"type": "LoggerHook", "interval": 4}},
                **kwargs).train()


def test_enabled_draws_train_and_val_bars(tmp_path: Path) -> None:
    stream = io.StringIO()
    run(tmp_path, ProgressBarHook(enabled=True, file=stream, leave=True))
    text = stream.getvalue()
    assert re.search(r"train: 100%\|.*\| 16/16 \[", text), text
    # the loss comes from LoggerHook's latest line (no extra device read)
    last_loss = re.findall(r"loss=(\d\.\d{4})", text)[-1]
    log = (tmp_path / "log.txt").read_text(encoding="utf-8")
    assert f"loss: {last_loss}" in log
    assert len(re.findall(r"val:\s+0%\|.*?\| 0/4 \[", text)) == 2, text  # one per validation


def test_silent_when_the_stream_is_not_a_terminal(tmp_path: Path) -> None:
    stream = io.StringIO()
    hook = ProgressBarHook(file=stream)
    assert not hook.shows()
    run(tmp_path, hook)
    assert stream.getvalue() == ""


def test_default_stream_is_stderr_and_captured_stderr_is_not_a_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run(tmp_path, HOOKS.build({"type": "ProgressBarHook"}))
    assert "train:" not in capsys.readouterr().err
    run(tmp_path / "forced", HOOKS.build({"type": "ProgressBarHook", "enabled": True}))
    assert "train:" in capsys.readouterr().err


def test_shows_on_a_terminal_and_never_when_disabled(tmp_path: Path) -> None:
    terminal = Terminal()
    run(tmp_path / "tty", ProgressBarHook(file=terminal, eval_bars=False))
    assert "train:" in terminal.getvalue() and "val:" not in terminal.getvalue()
    terminal = Terminal()
    run(tmp_path / "off", ProgressBarHook(enabled=False, file=terminal))
    assert terminal.getvalue() == ""


def test_resumed_run_starts_the_bar_at_the_resumed_iteration(tmp_path: Path) -> None:
    make_runner(tmp_path, max_epochs=1, default_hooks={"checkpoint": {"type": "CheckpointHook"}}
                ).train()
    stream = io.StringIO()
    run(tmp_path, ProgressBarHook(enabled=True, file=stream, leave=True, eval_bars=False),
        resume="auto")
    assert re.search(r"train:\s+50%\|.*\| 8/16 \[", stream.getvalue()), stream.getvalue()
    assert "16/16" in stream.getvalue()


@pytest.mark.parametrize("kwargs, message", [
    ({"enabled": "yes"}, "enabled must be None (only on a terminal), True or False"),
    ({"file": "stderr"}, "file must be a text stream with write()"),
])
def test_bad_arguments(kwargs, message) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ProgressBarHook(**kwargs)
