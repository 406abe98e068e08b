"""Visualizer and Runner files as MMEngine 0.10.7 writes them (/tmp/probe4_vis/mm_vis.py,
mm_fromcfg.py): ``save_dir/vis_data``, a single backend dict, ``vis_data/config.py`` as
Python config text, a ``step`` key of the scalars' own, ``max_epochs`` 1 in an
iteration-based run."""

from __future__ import annotations

import json

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Runner
from hookline.engine import visualizer as _vis
from hookline.engine.visualizer import LocalVisBackend, Visualizer


def _runner(tmp_path, **kwargs):
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    options = dict(optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
                   train_dataloader=DataLoader(data, batch_size=4), work_dir=tmp_path,
                   device="cpu", default_hooks={"logger": None, "checkpoint": None,
                                                "progress": None})
    options.update(kwargs)
    return Runner(torch.nn.Linear(4, 2), **options)


def test_save_dir_gets_vis_data_and_a_single_dict_is_one_backend(tmp_path):
    vis = Visualizer(name="parity-a", save_dir=tmp_path, vis_backends={"type": "LocalVisBackend"})
    assert list(vis.backends) == ["LocalVisBackend"]
    vis.add_scalars({"x": 1.0}, step=3)
    assert json.loads((tmp_path / "vis_data" / "scalars.json").read_text()) == {"x": 1.0,
                                                                               "step": 3}


@pytest.mark.parametrize("bad", ["LocalVisBackend", 3, ["LocalVisBackend"]])
def test_other_vis_backends_are_config_errors(tmp_path, bad):
    with pytest.raises(ConfigError, match="vis_backends"):
        Visualizer(name="parity-bad", save_dir=tmp_path, vis_backends=bad)


def test_a_step_of_the_scalars_own_wins(tmp_path):
    backend = LocalVisBackend(tmp_path)
    backend.add_scalars({"x": 1.0, "step": 99, "iter": 5}, step=3)
    assert (tmp_path / "scalars.json").read_text() == '{"x": 1.0, "step": 99, "iter": 5}\n'


def test_config_text_is_python_config():
    assert _vis.config_text({"a": 1, "b": {"c": 2}, "d": {"not id": [1, (2,)]}, "e": "s"}) == (
        "a = 1\nb = dict(c=2)\nd = {'not id': [1, (2,)]}\ne = 's'")


def test_runner_with_a_config_writes_vis_data_config_py(tmp_path):
    config = {"optimizer": {"type": "SGD", "lr": 0.1}, "max_epochs": 1}
    runner = _runner(tmp_path, config=config, max_epochs=1)
    vis = tmp_path / runner.timestamp / "vis_data"
    assert not vis.exists()  # nothing visualized yet: no folder
    runner.visualizer.add_scalar("x", 1.0)  # the Runner's files stay in work_dir/<ts>/vis_data
    assert (vis / "config.py").read_text() == (
        "optimizer = dict(type='SGD', lr=0.1)\nmax_epochs = 1\n")
    assert (vis / "scalars.json").exists()
    assert not (vis / "vis_data").exists()


def test_runner_without_a_config_writes_nothing_at_start(tmp_path):
    runner = _runner(tmp_path, max_epochs=1)
    assert not (tmp_path / runner.timestamp).exists()


def test_iteration_based_runs_report_max_epochs_1(tmp_path):
    runner = _runner(tmp_path, max_iters=10)
    assert runner.message_hub.get_info("max_epochs") == 1
    assert _runner(tmp_path, max_epochs=3).message_hub.get_info("max_epochs") == 3
