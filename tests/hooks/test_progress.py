"""ProgressBarHook on real runs: a tqdm bar when asked or on a terminal, silence otherwise."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from hookline import HOOKS, ConfigError, Hook, HookError
from hookline.engine.logs import console_of
from hookline.hooks import ProgressBarHook

from ..engine.toy import make_runner

TIMESTAMP = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} - hookline - ")


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


def test_default_stream_is_the_console_and_log_lines_go_around_the_bars(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run(tmp_path, HOOKS.build({"type": "ProgressBarHook"}))
    out = capsys.readouterr().out
    assert "train:" not in out and "it/s" not in out  # captured stdout is not a terminal
    plain = [line for line in out.splitlines() if " - hookline - " in line]
    assert plain and all(TIMESTAMP.match(line) for line in plain)
    run(tmp_path / "forced", HOOKS.build({"type": "ProgressBarHook", "enabled": True}))
    captured = capsys.readouterr()
    assert "train:" in captured.out and "train:" not in captured.err  # one stream: stdout
    # tqdm.write cleared the bars before each log line: what follows the last carriage
    # return (and cursor-up moves back from a second bar's row) is the whole log line
    shown = [re.sub(r"\x1b\[\d*A", "", line.rsplit("\r", 1)[-1])
             for line in captured.out.split("\n") if " - hookline - " in line]
    assert len(shown) == len(plain) and all(TIMESTAMP.match(line) for line in shown), shown


class WriterProbe(Hook):
    """Records, at every training iteration, whether the runner's console lines go through
    a bar's writer, and whether a second runner built meanwhile has one; may raise."""

    priority = "LOWEST"

    def __init__(self, other_dir: Path, fail_at: int | None = None) -> None:
        self.other_dir, self.fail_at = other_dir, fail_at
        self.routed: list[bool] = []
        self.other_routed: list[bool] = []

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        console = console_of(runner.logger)
        assert console is not None
        self.routed.append(console.writer is not None)
        if len(self.routed) == 1:
            other = make_runner(self.other_dir, max_epochs=1)
            other_console = console_of(other.logger)
            assert other_console is not None
            self.other_routed.append(other_console.writer is not None)
        if self.fail_at == len(self.routed):
            raise RuntimeError("stop here")


def test_console_lines_are_routed_only_while_a_bar_is_open_and_per_runner(tmp_path: Path) -> None:
    probe = WriterProbe(tmp_path / "other")
    runner = make_runner(tmp_path / "a", max_epochs=1, hooks=[probe],
                         default_hooks={"progress": ProgressBarHook(enabled=True, file=io.StringIO())})
    runner.train()
    assert probe.routed == [True] * 8 and probe.other_routed == [False]
    console = console_of(runner.logger)
    assert console is not None and console.writer is None  # given back when the bars closed


def test_a_failing_run_gives_the_console_back(tmp_path: Path) -> None:
    probe = WriterProbe(tmp_path / "other", fail_at=3)
    runner = make_runner(tmp_path / "a", max_epochs=1, hooks=[probe],
                         default_hooks={"progress": ProgressBarHook(enabled=True, file=io.StringIO())})
    with pytest.raises(HookError, match="stop here"):
        runner.train()
    assert probe.routed == [True] * 3
    console = console_of(runner.logger)
    assert console is not None and console.writer is None


def test_no_bar_no_routing(tmp_path: Path) -> None:
    probe = WriterProbe(tmp_path / "other")
    make_runner(tmp_path / "a", max_epochs=1, hooks=[probe],
                default_hooks={"progress": ProgressBarHook(file=io.StringIO())}).train()
    assert probe.routed == [False] * 8


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
