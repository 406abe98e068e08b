"""hookline.compat.mmengine.logging: print_log, MMLogger, MessageHub."""

from __future__ import annotations

import logging

import pytest

from hookline.compat.mmengine.logging import HistoryBuffer, MessageHub, MMLogger, print_log

from ..conftest import make_runner


def test_print_log_destinations(capsys, caplog):
    print_log("to stdout")
    assert capsys.readouterr().out == "to stdout\n"
    print_log("nothing", logger="silent")
    with caplog.at_level(logging.INFO, logger="compat-test"):
        print_log("named", logger="compat-test")
        print_log("object", logger=logging.getLogger("compat-test"), level=logging.WARNING)
    assert [r.getMessage() for r in caplog.records] == ["named", "object"]
    with pytest.raises(TypeError, match="logger should be"):
        print_log("x", logger=3)


def test_current_logger_and_hub_are_the_runners(tmp_path):
    runner = make_runner(tmp_path)
    assert MMLogger.get_current_instance() is runner.logger
    seen = []
    runner.on("after_train_epoch", lambda r: seen.append(
        (MMLogger.get_current_instance() is r.logger,
         MessageHub.get_current_instance() is r.message_hub)))
    make_runner(tmp_path / "later")  # made later, but not running
    runner.train()
    assert seen == [(True, True), (True, True)]
    print_log("through the runner's logger", logger="current")
    assert "through the runner's logger" in (tmp_path / "log.txt").read_text()


def test_named_hubs_and_history_buffers():
    hub = MessageHub.get_instance("compat-named")
    assert MessageHub.get_instance("compat-named") is hub
    hub.update_scalar("loss", 2.0)
    assert isinstance(hub.get_scalar("loss"), HistoryBuffer)
    assert HistoryBuffer.register_statistics(lambda buffer: len(buffer)).__name__ == "<lambda>"
    assert hub.get_scalar("loss").statistics("<lambda>") == 1
    assert hub.get_scalar("loss").statistics("mean") == 2.0
    with pytest.raises(KeyError, match="unknown statistic"):
        hub.get_scalar("loss").statistics("median")
