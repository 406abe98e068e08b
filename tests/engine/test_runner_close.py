"""``Runner.close()``, ``with Runner(...)``, and a Runner freed by ``del`` without the collector."""

from __future__ import annotations

import gc
import logging
import weakref
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.core import ConfigError
from hookline.engine.logs import writer_of


def _runner(work_dir: Path, **kwargs: Any) -> Runner:
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(0))
    data = TensorDataset(x, (x[:, 0] > 0).long())
    options: dict[str, Any] = dict(
        optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
        train_dataloader=DataLoader(data, batch_size=4, shuffle=True),
        val_dataloader=DataLoader(data, batch_size=8), metrics={"acc": "accuracy"},
        max_epochs=1, work_dir=str(work_dir),
        default_hooks={"logger": {"type": "LoggerHook", "interval": 2}, "checkpoint": None})
    options.update(kwargs)
    return Runner(torch.nn.Linear(4, 2), **options)


def _open_files(logger: logging.Logger) -> list[Any]:
    return [h for h in logger.handlers if getattr(h, "stream", None) is not None]


def test_close_releases_the_log_file_and_the_writer_thread(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    runner.train()
    writer = writer_of(runner.logger)
    assert writer is not None and _open_files(runner.logger)
    runner.close()
    runner.close()  # idempotent
    assert runner.logger.handlers == []
    assert (tmp_path / "log.txt").read_text().strip()
    with pytest.raises(ConfigError, match=r"train\(\) on a Runner that was closed"):
        runner.train()
    with pytest.raises(ConfigError, match=r"val\(\) on a Runner that was closed"):
        runner.val()


def test_a_with_block_closes_the_runner(tmp_path: Path) -> None:
    with _runner(tmp_path) as runner:
        runner.train()
        assert runner.logger.handlers
    assert runner.logger.handlers == []


def test_a_failing_with_block_closes_the_runner_too(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="cell failed"), _runner(tmp_path) as runner:
        runner.train()
        raise RuntimeError("cell failed")
    assert runner.logger.handlers == []


def test_del_frees_a_runner_without_the_cycle_collector(tmp_path: Path) -> None:
    _runner(tmp_path / "first").train()  # lazy imports of a first run are done
    gc.collect()
    runner = _runner(tmp_path / "second")
    runner.train()
    runner.val()
    ref, logger = weakref.ref(runner), runner.logger
    gc.disable()
    try:
        del runner
        assert ref() is None  # no reference cycle: freed at once
        assert logger.handlers == []  # and its finalizer closed log.txt
    finally:
        gc.enable()


def test_the_loops_reach_their_runner_between_runs(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    loop = runner.train_loop
    assert loop is not None and loop.runner is runner
    runner.train()
    assert "runner" not in vars(loop) and loop.runner is runner
    assert runner.message_hub.get_info("epoch") == 1


@pytest.mark.parametrize("bad", [[1, 2, 3], None, {"dataset": [1, 2], "batch_size": 2}])
def test_a_loader_that_is_not_a_dataloader_is_refused_where_it_is_assigned(
        tmp_path: Path, bad: Any) -> None:
    runner = _runner(tmp_path)
    assert runner.train_loop is not None and runner.val_loop is not None
    with pytest.raises(ConfigError, match=r"EpochBasedTrainLoop.dataloader must be a torch "
                                          r"DataLoader .*runner.build_dataloader"):
        runner.train_loop.dataloader = bad
    with pytest.raises(ConfigError, match=r"ValLoop.dataloader must be a torch DataLoader"):
        runner.val_loop.dataloader = bad
    runner.train_loop.dataloader = runner.build_dataloader(
        {"dataset": runner.train_dataloader.dataset, "batch_size": 8})
    runner.train()
    assert runner.iter == 2
