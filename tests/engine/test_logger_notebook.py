"""The Runner's logger in a notebook: it follows the ``hookline`` logger's level and the
``sys.stdout`` of the moment."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.engine.logs import ConsoleHandler, console_of


@pytest.fixture(autouse=True)
def _hookline_level() -> Iterator[None]:
    package = logging.getLogger("hookline")
    level = package.level
    yield
    package.setLevel(level)


def _runner(work_dir: Path, **kwargs: Any) -> Runner:
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(0))
    options: dict[str, Any] = dict(
        optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
        train_dataloader=DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=4),
        max_epochs=1, work_dir=str(work_dir),
        default_hooks={"logger": {"type": "LoggerHook", "interval": 2}, "checkpoint": None})
    options.update(kwargs)
    return Runner(torch.nn.Linear(4, 2), **options)


def test_the_hookline_logger_level_quiets_a_runner_built_before(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    assert runner.logger.level == logging.NOTSET
    assert logging.getLogger("hookline").getEffectiveLevel() <= logging.INFO
    logging.getLogger("hookline").setLevel(logging.WARNING)  # a later cell: "quiet, please"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runner.train()
    assert out.getvalue() == ""
    assert (tmp_path / "metrics.jsonl").read_text().strip()  # the records are still written


def test_a_level_given_to_the_hookline_logger_is_kept(tmp_path: Path) -> None:
    logging.getLogger("hookline").setLevel(logging.ERROR)
    _runner(tmp_path)
    assert logging.getLogger("hookline").level == logging.ERROR


def test_by_default_a_run_logs_info_lines(tmp_path: Path) -> None:
    logging.getLogger("hookline").setLevel(logging.NOTSET)
    logging.getLogger().setLevel(logging.WARNING)  # the root's default
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _runner(tmp_path).train()
    assert " - INFO - " in out.getvalue()
    assert " - INFO - " in (tmp_path / "log.txt").read_text()


def test_lines_go_to_the_stdout_of_the_moment(tmp_path: Path) -> None:
    built_in = io.StringIO()
    with contextlib.redirect_stdout(built_in):  # cell 1 ran under %%capture
        runner = _runner(tmp_path)
    trained_in = io.StringIO()
    with contextlib.redirect_stdout(trained_in):  # cell 2's output
        runner.train()
    assert built_in.getvalue() == ""
    assert "Epoch(train)" in trained_in.getvalue()
    handler = console_of(runner.logger)
    assert handler is not None and handler.stream is not built_in


def test_a_stream_given_or_assigned_is_kept() -> None:
    given = io.StringIO()
    handler = ConsoleHandler(given)
    with contextlib.redirect_stdout(io.StringIO()):
        assert handler.stream is given
    handler = ConsoleHandler()
    assigned = io.StringIO()
    handler.stream = assigned
    with contextlib.redirect_stdout(io.StringIO()):
        assert handler.stream is assigned
