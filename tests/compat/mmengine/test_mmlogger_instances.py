"""``MMLogger.get_instance`` and ``print_log(logger='current')`` as MMEngine 0.10.7's
(/tmp/probe4_vis/mm_log.py): log_file honoured, instance_name, the latest instance current,
INFO printed before any Runner."""

from __future__ import annotations

import logging

import pytest

from hookline import ConfigError
from hookline.compat.mmengine.logging import MMLogger, print_log
from hookline.engine import logs

from ..conftest import make_runner


@pytest.fixture(autouse=True)
def _no_current_logger(monkeypatch):
    monkeypatch.setattr(logs, "_CURRENT", [None])


def test_log_file_and_instance_name_and_current(tmp_path):
    logger = MMLogger.get_instance("parity-mylog", log_file=tmp_path / "my.log", log_level="INFO")
    logger.info("to my log file")
    for handler in logger.handlers:
        handler.flush()
    assert (tmp_path / "my.log").read_text().rstrip().endswith(
        "- parity-mylog - INFO - to my log file")
    assert logger.instance_name == "parity-mylog"
    assert MMLogger.get_current_instance() is logger
    assert MMLogger.get_instance("parity-mylog") is logger


def test_print_log_current_prints_info_before_any_runner(capsys):
    logging.getLogger("mmengine").handlers.clear()
    logging.getLogger("mmengine").__dict__.pop("instance_name", None)
    print_log("info before any runner", logger="current")
    assert "mmengine - INFO - info before any runner" in capsys.readouterr().out


def test_a_running_runner_is_current_again(tmp_path):
    runner = make_runner(tmp_path)
    other = MMLogger.get_instance("parity-later")
    assert MMLogger.get_current_instance() is other  # made last
    seen = []
    runner.on("after_train_epoch", lambda r: seen.append(MMLogger.get_current_instance()))
    runner.train()
    assert seen == [runner.logger, runner.logger]


def test_bad_log_level_is_a_config_error():
    with pytest.raises(ConfigError, match="log_level must be one of"):
        MMLogger.get_instance("parity-bad-level", log_level="LOUD")
