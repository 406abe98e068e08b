"""The config check of metric names (``save_best``, ``monitor``) refuses only what it can know
before the run, and ``test_metrics`` from a config reaches ``hookline test``."""

from __future__ import annotations

import json

import pytest
import yaml

from hookline.app.config import build_runner
from hookline.cli import main
from hookline.core import ConfigError

PARTS = '''
import torch
from torch.utils.data import TensorDataset

from hookline import METRICS
from hookline.engine.registries import DATASETS, MODELS


@DATASETS.register(force=True)
class NamesToy(TensorDataset):
    def __init__(self, n=64, seed=0):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 4, generator=g)
        super().__init__(x, (x[:, 0] > 0).long())


@MODELS.register(force=True)
class NamesLin(torch.nn.Linear):
    def __init__(self):
        torch.manual_seed(0)
        super().__init__(4, 2)


@METRICS.register(force=True)
def names_topk(preds, targets):
    """Reports under its own names, as MMEngine's metrics with a prefix do."""
    return {"accuracy/top1": (preds.argmax(1) == targets).float().mean(), "accuracy/top2": 1.0}


@METRICS.register(force=True)
def names_count(preds, targets):
    return {"count/n": len(targets)}
'''

CONFIG = {
    "custom_imports": ["hl_config_metric_names_parts"],
    "model": {"type": "NamesLin"},
    "loss_fn": {"type": "CrossEntropyLoss"},
    "optimizer": {"type": "SGD", "lr": 0.5},
    "train_dataloader": {"dataset": {"type": "NamesToy", "n": 64, "seed": 0}, "batch_size": 16},
    "val_dataloader": {"dataset": {"type": "NamesToy", "n": 32, "seed": 1}, "batch_size": 16},
    "test_dataloader": {"dataset": {"type": "NamesToy", "n": 32, "seed": 2}, "batch_size": 16},
    "metrics": {"acc": "names_topk"},
    "max_epochs": 2,
    "default_hooks": {"progress": None, "logger": {"interval": 100},
                      "checkpoint": {"interval": 1, "save_best": "accuracy/top1"}},
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "hl_config_metric_names_parts.py").write_text(PARTS)
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _config(**changes):
    cfg = yaml.safe_load(yaml.safe_dump(CONFIG))
    cfg.update(changes)
    return cfg


def test_a_name_a_dict_metric_reports_trains_tests_and_validates_from_the_cli(project, capsys):
    assert main(["train", "run.yaml", "--work-dir", "out"]) == 0
    [best] = project.glob("out/*/best_accuracy_top1_epoch_*.pth")
    assert main(["test", "run.yaml", "--work-dir", "out"]) == 0
    assert main(["val", "run.yaml", "--work-dir", "out"]) == 0
    out = capsys.readouterr().out
    assert "test: loss" in out and "accuracy/top1" in out and best.name in out


def test_a_name_no_validation_can_report_is_still_refused(project):
    cfg = _config(metrics={"acc": "accuracy"})  # the built-in: one number, named "acc"
    cfg["default_hooks"]["checkpoint"]["save_best"] = "accuracy/top1"
    with pytest.raises(ConfigError) as info:
        build_runner(cfg, work_dir=project / "a", for_training=True)
    assert "'accuracy/top1' is not a validation metric of this run" in str(info.value)
    assert "acc, loss" in str(info.value)
    # hookline test / val build the same config without the training check: accepted
    build_runner(cfg, work_dir=project / "b")


def test_monitor_and_eval_hook_names_follow_the_same_rule(project):
    cfg = _config(hooks=[{"type": "EarlyStoppingHook", "monitor": "accuracy/top1"},
                         {"type": "EvalHook", "dataloader": CONFIG["val_dataloader"],
                          "metrics": {"cnt": "names_count"}, "save_best": "count/n",
                          "rule": "greater"}])
    build_runner(cfg, work_dir=project / "a", for_training=True)
    cfg["hooks"][1]["metrics"] = {"cnt": "accuracy"}  # known: reports "cnt" only
    with pytest.raises(ConfigError, match=r"hooks\[1\].save_best: 'count/n'"):
        build_runner(cfg, work_dir=project / "b", for_training=True)


def test_test_metrics_from_the_config_reach_hookline_test(project, capsys):
    cfg = _config(test_metrics={"acc": "names_topk", "cnt": "names_count"})
    (project / "run.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["train", "run.yaml", "--work-dir", "out"]) == 0
    log = "\n".join(p.read_text() for p in project.glob("out/*/log.txt"))
    assert "count/n" not in log  # validation: metrics only
    assert main(["test", "run.yaml", "--work-dir", "out"]) == 0
    [report] = project.glob("out/*/eval/test_*.json")
    metrics = json.loads(report.read_text())["metrics"]
    assert metrics["count/n"] == 32 and "accuracy/top1" in metrics
    assert main(["val", "run.yaml", "--work-dir", "out"]) == 0
    [report] = project.glob("out/*/eval/val_*.json")
    assert "count/n" not in json.loads(report.read_text())["metrics"]
    with pytest.raises(ConfigError, match=r"test_metrics.cnt: .*names_cuont"):
        build_runner(_config(test_metrics={"cnt": "names_cuont"}), work_dir=project / "x")
