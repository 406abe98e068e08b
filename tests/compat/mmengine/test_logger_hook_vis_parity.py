"""The compat LoggerHook writes ``vis_data`` as MMEngine 0.10.7's LoggerHook does.

The expected records were read off real MMEngine runs of the same shape
(/tmp/probe4_vis/mm_val.py, mm_run.py): unprefixed keys, ``epoch``/``iter`` in
training records, validation stepped by epoch (``log_metric_by_epoch``) or by
iteration, the same records in ``vis_data/<timestamp>.json``.
"""

from __future__ import annotations

import json

import pytest
from torch.utils.data import DataLoader

from hookline import ConfigError
from hookline.compat.mmengine.hooks import LoggerHook

from ..conftest import make_runner, toy_data


def _run(tmp_path, **logger_options):
    runner = make_runner(tmp_path, default_hooks={"logger": LoggerHook(**logger_options)},
                         val_dataloader=DataLoader(toy_data(), batch_size=32),
                         metrics={"acc": "accuracy"})
    runner.train()
    vis = runner.work_dir / runner.timestamp / "vis_data"
    return runner, vis


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_train_and_val_records_match_mmengine(tmp_path):
    runner, vis = _run(tmp_path, interval=4)
    records = _records(vis / "scalars.json")
    train = [r for r in records if "lr" in r]
    assert [(r["epoch"], r["iter"], r["step"]) for r in train] == [(1, 4, 4), (1, 8, 8),
                                                                   (2, 12, 12), (2, 16, 16)]
    assert set(train[0]) == {"lr", "loss", "time", "data_time", "epoch", "iter", "step"}
    assert not any("/" in key for r in records for key in r)  # no train/ val/ prefixes
    val = [r for r in records if "acc" in r]
    assert [r["step"] for r in val] == [1, 2]  # the epoch
    assert set(val[0]) == {"loss", "acc", "step"}
    json_log = vis / f"{runner.timestamp}.json"
    assert _records(json_log) == records


def test_log_metric_by_epoch_false_only_steps_validation_by_iteration(tmp_path):
    runner, vis = _run(tmp_path, interval=4, log_metric_by_epoch=False)
    val = [r for r in _records(vis / "scalars.json") if "acc" in r]
    assert [r["step"] for r in val] == [8, 16]
    text = (tmp_path / "log.txt").read_text()
    assert "Epoch(train) [1][4/8]" in text and "Iter(train)" not in text


def test_iteration_based_records_have_iter_but_no_epoch(tmp_path):
    runner = make_runner(tmp_path, default_hooks={"logger": LoggerHook(interval=5)},
                         max_epochs=None, max_iters=12)
    runner.train()
    train = _records(runner.work_dir / runner.timestamp / "vis_data" / "scalars.json")
    assert [(r["iter"], r["step"], "epoch" in r) for r in train] == [(5, 5, False),
                                                                    (10, 10, False)]


def test_exp_name_line_every_interval_exp_name_and_epoch_end(tmp_path):
    runner, _ = _run(tmp_path, interval=4, interval_exp_name=3)
    lines = [line for line in (tmp_path / "log.txt").read_text().splitlines()
             if "Exp name:" in line]
    # iterations 3, 6, 8 (epoch end), 9, 12, 15, 16 (epoch end)
    assert len(lines) == 7
    assert lines[0].endswith(f"Exp name: {runner.experiment_name}")


@pytest.mark.parametrize(("options", "match"), [
    ({"interval_exp_name": 0}, "interval_exp_name must be an int >= 1"),
    ({"interval_exp_name": "x"}, "interval_exp_name must be an int >= 1"),
    ({"out_suffix": 3}, "out_suffix must be a string or a sequence of strings"),
    ({"keep_local": "no"}, "keep_local"),
])
def test_invalid_arguments_are_config_errors(options, match):
    with pytest.raises(ConfigError, match=match):
        LoggerHook(**options)
