"""``TERM=dumb`` (Emacs shell buffers, some CI consoles) has no carriage return redraw or
cursor moves: ProgressBarHook draws no bar there by default, even on a terminal."""

from __future__ import annotations

import os
import pty

import pytest

from hookline.hooks import ProgressBarHook


@pytest.fixture
def terminal():
    """A real pseudo-terminal's writing end, as a text stream."""
    leader, follower = pty.openpty()
    stream = os.fdopen(follower, "w")
    yield stream
    stream.close()
    os.close(leader)


@pytest.mark.parametrize(("term", "shown"), [("xterm-256color", True), ("dumb", False)])
def test_a_dumb_terminal_gets_no_bar(terminal, monkeypatch, term, shown):
    monkeypatch.setenv("TERM", term)
    assert terminal.isatty()
    assert ProgressBarHook(file=terminal).shows() is shown


def test_enabled_true_still_draws_on_a_dumb_terminal(terminal, monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    assert ProgressBarHook(enabled=True, file=terminal).shows() is True
