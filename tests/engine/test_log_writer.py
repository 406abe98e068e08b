"""LogWriter and the Runner logger's queue (hookline.engine.log_writer, engine/logs.py): order,
drains, failures handed back, the calls that must not wait for themselves, and the console
lines that stay on the calling thread while a progress bar is open."""

from __future__ import annotations

import io
import logging
import threading
import time
from pathlib import Path

import pytest

from hookline.engine.log_writer import LogWriter
from hookline.engine.logs import (
    close_logger,
    console_of,
    flush_logger,
    log_queued,
    make_logger,
    writer_of,
)


@pytest.fixture
def writer():
    writer = LogWriter()
    yield writer
    writer.close()


def test_calls_run_in_order_on_one_other_thread(writer: LogWriter) -> None:
    seen: list[tuple[int, int]] = []
    for n in range(200):
        writer.submit(lambda n=n: seen.append((n, threading.get_ident())))
    writer.drain()
    assert [n for n, _ in seen] == list(range(200))
    threads = {ident for _, ident in seen}
    assert len(threads) == 1 and threading.get_ident() not in threads
    assert writer.pending == 0


def test_the_first_failure_is_raised_once_and_later_calls_still_run(writer: LogWriter) -> None:
    seen: list[int] = []

    def fail(message: str) -> None:
        raise OSError(message)

    writer.submit(fail, "disk full")
    writer.submit(fail, "second")
    writer.submit(seen.append, 1)
    with pytest.raises(OSError, match="disk full"):
        writer.drain()
    writer.drain()  # handed over once
    assert seen == [1]
    writer.submit(fail, "next")
    writer.wait()  # waits, keeps the failure for the next submit or drain
    with pytest.raises(OSError, match="next"):
        writer.submit(seen.append, 2)


def test_a_call_that_submits_or_drains_does_not_wait_for_itself(writer: LogWriter) -> None:
    seen: list[str] = []

    def outer() -> None:
        writer.submit(seen.append, "inner")  # on the writer thread: runs at once
        writer.drain()
        seen.append("outer")

    writer.submit(outer)
    writer.submit(seen.append, "after")
    writer.drain()
    assert seen == ["inner", "outer", "after"]


def test_background_off_runs_on_the_caller_after_what_was_queued(writer: LogWriter) -> None:
    seen: list[tuple[str, int]] = []
    writer.submit(lambda: seen.append(("queued", threading.get_ident())))
    writer.background = False
    writer.submit(lambda: seen.append(("inline", threading.get_ident())))
    assert [name for name, _ in seen] == ["queued", "inline"]  # no drain needed
    assert seen[1][1] == threading.get_ident() != seen[0][1]


def test_close_stops_the_thread_and_a_new_call_starts_another(writer: LogWriter) -> None:
    idents: list[int] = []
    writer.submit(lambda: idents.append(threading.get_ident()))
    writer.close()
    names = [t.name for t in threading.enumerate()]
    assert writer.name not in names
    writer.submit(lambda: idents.append(threading.get_ident()))
    writer.drain()
    assert len(idents) == 2


def test_a_direct_line_from_any_thread_comes_after_the_queued_ones(tmp_path: Path) -> None:
    logger = make_logger(tmp_path, main_process=True, console=False)
    gate = threading.Event()
    writer = writer_of(logger)
    assert writer is not None
    writer.submit(gate.wait)  # hold the writer: the next lines stay queued
    for n in range(3):
        log_queued(logger, logging.INFO, f"queued {n}")
    log_queued(logger, logging.INFO, lambda: "made on the writer thread")
    assert writer.pending >= 4  # the writer is held: the lines wait
    direct = threading.Thread(target=logger.warning, args=("direct, from another thread",))
    direct.start()
    gate.set()
    direct.join()
    close_logger(logger)
    lines = [line.split(" - ", 3)[3] for line in
             (tmp_path / "log.txt").read_text(encoding="utf-8").splitlines()]
    assert lines == ["queued 0", "queued 1", "queued 2", "made on the writer thread",
                     "direct, from another thread"]


def test_flush_logger_waits_and_a_line_keeps_the_time_it_was_queued(tmp_path: Path) -> None:
    logger = make_logger(tmp_path, main_process=True, console=False)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    gate = threading.Event()
    writer_of(logger).submit(gate.wait)  # type: ignore[union-attr]
    before = time.time()
    log_queued(logger, logging.INFO, "100% done")  # a % in the text is not a format
    after = time.time()
    while time.time() <= after:  # the clock moves on before the writer makes the record
        pass
    assert records == []  # still queued
    gate.set()
    flush_logger(logger)
    assert [r.getMessage() for r in records] == ["100% done"]
    assert before <= records[0].created <= after
    close_logger(logger)


def test_console_lines_stay_on_the_calling_thread_while_the_console_has_a_writer(
        tmp_path: Path) -> None:
    logger = make_logger(tmp_path, main_process=True)
    console = console_of(logger)
    assert console is not None
    console.setStream(io.StringIO())
    threads: list[int] = []
    console.writer = lambda line, out: (threads.append(threading.get_ident()),
                                        out.write(line + "\n"))
    log_queued(logger, logging.INFO, "next to a bar")
    assert threads == [threading.get_ident()]  # written at once, on this thread
    console.writer = None
    log_queued(logger, logging.INFO, "no bar")
    flush_logger(logger)
    assert console.stream.getvalue().splitlines()[-1].endswith("no bar")
    close_logger(logger)


def test_other_ranks_have_no_writer_and_log_at_once(tmp_path: Path) -> None:
    logger = make_logger(tmp_path, main_process=False)
    assert writer_of(logger) is None
    log_queued(logger, logging.INFO, "nothing to see")  # the NullHandler takes it
    flush_logger(logger)
    assert not (tmp_path / "log.txt").exists()
