"""The Runner logger's console handler: file-only records and a replaceable writer."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from hookline.engine.logs import FILE_ONLY, ConsoleHandler, close_logger, console_of, make_logger


def test_file_only_records_reach_log_txt_but_not_the_console(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    logger = make_logger(tmp_path, main_process=True)
    try:
        logger.info("both")
        logger.info("table:\n%s", "row 1\nrow 2", extra=FILE_ONLY)
    finally:
        close_logger(logger)
    out = capsys.readouterr().out
    assert "both" in out and "table" not in out and "row 1" not in out
    log = (tmp_path / "log.txt").read_text(encoding="utf-8")
    assert "both" in log and "table:\nrow 1\nrow 2" in log


def test_the_writer_gets_each_formatted_line_and_the_stream(tmp_path: Path) -> None:
    logger = make_logger(tmp_path, main_process=True)
    console = console_of(logger)
    assert isinstance(console, ConsoleHandler) and console.writer is None
    stream = io.StringIO()
    console.setStream(stream)
    got: list[tuple[str, io.StringIO]] = []
    console.writer = lambda line, out: got.append((line, out))
    logger.warning("routed %d", 1)
    console.writer = None
    logger.warning("plain")
    close_logger(logger)
    ((line, out),) = got
    assert line.endswith(" - hookline - WARNING - routed 1") and "\n" not in line and out is stream
    assert stream.getvalue().endswith(" - hookline - WARNING - plain\n")
    assert "routed 1" in (tmp_path / "log.txt").read_text(encoding="utf-8")  # the file as always


def test_a_failing_writer_is_reported_like_any_handler_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(logging, "raiseExceptions", True)
    logger = make_logger(tmp_path, main_process=True)
    console = console_of(logger)
    assert console is not None

    def broken(line: str, stream: object) -> None:
        raise OSError("terminal gone")

    console.writer = broken
    logger.info("still in the file")  # no exception escapes into the training loop
    close_logger(logger)
    assert "terminal gone" in capsys.readouterr().err
    assert "still in the file" in (tmp_path / "log.txt").read_text(encoding="utf-8")


def test_other_ranks_have_no_console(tmp_path: Path) -> None:
    logger = make_logger(tmp_path, main_process=False)
    assert console_of(logger) is None
    logger = make_logger(tmp_path, main_process=True, console=False)
    assert console_of(logger) is None
    close_logger(logger)
