"""Bars and log lines on a real (pseudo-)terminal: ``hookline train`` runs under a pty at
80 and 160 columns, its byte stream is replayed through a small screen model, and every
log line must come out whole, with no bar fragment spliced into it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

TIMESTAMP = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} - hookline - ")
CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")
BAR_FRAGMENTS = ("it/s", "%|", "|")


class Screen:
    """A minimal terminal: printable text with auto-wrap at ``cols``, CR, LF, backspace
    and the CSI sequences tqdm emits (cursor up/down/left/right/column, erase in line).
    Rows are never scrolled away, so ``lines()`` is the screen plus its scrollback."""

    def __init__(self, cols: int) -> None:
        self.cols = cols
        self.rows: list[list[str]] = [[]]
        self.continued = [False]  # row r is the soft-wrapped rest of row r - 1
        self.row = self.col = 0
        self.pending_wrap = False

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            match = CSI.match(text, i)
            if match:
                self._csi(match.group(1), match.group(2))
                i = match.end()
                continue
            char = text[i]
            if char == "\r":
                self.col, self.pending_wrap = 0, False
            elif char == "\n":
                self._down(1)
            elif char == "\b":
                self.col, self.pending_wrap = max(self.col - 1, 0), False
            elif char >= " " and char != "\x7f":
                self._put(char)
            i += 1

    def lines(self) -> list[str]:
        """Logical lines: soft-wrapped rows joined, trailing blanks dropped."""
        out: list[str] = []
        for row, continued in zip(self.rows, self.continued):
            text = "".join(row)
            if continued and out:
                out[-1] += text
            else:
                out.append(text)
        return [line.rstrip() for line in out]

    def _down(self, n: int) -> None:
        self.row += n
        self.pending_wrap = False
        while len(self.rows) <= self.row:
            self.rows.append([])
            self.continued.append(False)

    def _put(self, char: str) -> None:
        if self.pending_wrap:  # the text goes on in the first cell of the next row
            self._down(1)
            self.col = 0
            self.continued[self.row] = True
        elif self.col == 0:  # a row written from its start is a line of its own
            self.continued[self.row] = False
        row = self.rows[self.row]
        row.extend(" " * (self.col + 1 - len(row)))
        row[self.col] = char
        if self.col == self.cols - 1:
            self.pending_wrap = True
        else:
            self.col += 1

    def _csi(self, params: str, final: str) -> None:
        numbers = [int(p) for p in params.lstrip("?").split(";") if p.isdigit()]
        n = numbers[0] if numbers else 0
        self.pending_wrap = False
        if final == "A":
            self.row = max(self.row - max(n, 1), 0)
        elif final == "B":
            self._down(max(n, 1))
        elif final == "C":
            self.col = min(self.col + max(n, 1), self.cols - 1)
        elif final == "D":
            self.col = max(self.col - max(n, 1), 0)
        elif final == "G":
            self.col = min(max(n, 1) - 1, self.cols - 1)
        elif final == "K":
            row = self.rows[self.row]
            if n == 0:
                del row[self.col:]
            elif n == 1:
                row[:self.col + 1] = " " * min(self.col + 1, len(row))
            else:
                row.clear()
        # anything else (colours, modes) does not move text


def test_screen_model_replays_carriage_returns_wraps_and_cursor_moves() -> None:
    screen = Screen(cols=10)
    screen.feed("bar 10%\rbar 20%\r\n")            # a redraw over itself
    screen.feed("0123456789abc\r\n")               # soft-wrapped: one logical line
    screen.feed("first\r\nlow\x1b[A\rtop\x1b[K\r\n")  # cursor up, overwrite, erase the rest
    assert screen.lines() == ["bar 20%", "0123456789abc", "top", "low"]
    screen.feed("\x1b[A\x1b[A\rABCDEFGHIJxy\r\n")  # wraps into an existing row
    screen.feed("\x1b[A\rrow\r\n")                  # which a later write makes a line again
    assert screen.lines()[-3:] == ["ABCDEFGHIJ", "row", "low"]


def run_in_terminal(args: list[str], cols: int, cwd: Path) -> bytes:
    """Run ``args`` with stdin/stdout/stderr on a pty of ``cols`` columns; its whole output."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    env = {**os.environ, "TERM": "xterm", "PYTHONHASHSEED": "0", "LC_ALL": "C.UTF-8"}
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    process = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                               start_new_session=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 180  # a guard against a hung child, not a timing check
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        os.close(master)
    assert process.returncode == 0, b"".join(chunks).decode("utf-8", "replace")[-3000:]
    return b"".join(chunks)


@pytest.mark.parametrize("cols", [80, 160])
def test_log_lines_and_bars_never_interleave_on_a_terminal(tmp_path: Path, cols: int) -> None:
    work_dir = tmp_path / "run"
    raw = run_in_terminal(
        [sys.executable, "-m", "hookline", "train", "--work-dir", str(work_dir), "--no-curves",
         "--set", "max_epochs=2", "--set", "seed=0", "--set", "default_hooks.logger.interval=9",
         "--set", "default_hooks.checkpoint=null"],
        cols, tmp_path)
    text = raw.decode("utf-8", errors="replace")
    assert "it/s" in text and "val:" in text, text[-2000:]  # train and validation bars were drawn
    screen = Screen(cols)
    screen.feed(text)
    lines = screen.lines()
    shown = [line for line in lines if " - hookline - " in line]
    for line in shown:
        assert TIMESTAMP.match(line), f"a log line was cut or spliced:\n{line!r}"
        assert not any(fragment in line for fragment in BAR_FRAGMENTS), f"bar in a log line:\n{line!r}"
    (log_file,) = work_dir.rglob("log.txt")  # in work_dir or a run folder under it
    logged = [line for line in log_file.read_text(encoding="utf-8").splitlines()
              if TIMESTAMP.match(line)]
    epoch_lines = [line for line in logged if "Epoch(" in line]
    assert sum("Epoch(val)" in line for line in epoch_lines) == 2  # a val bar ran twice
    assert sum("Epoch(train)" in line for line in epoch_lines) >= 8  # several lines per epoch
    assert [line for line in shown if "Epoch(" in line] == epoch_lines  # all there, in order
    assert any(line.startswith("trained 2/2 epochs") for line in lines), "\n".join(lines[-5:])
