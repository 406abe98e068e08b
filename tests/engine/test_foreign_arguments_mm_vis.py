"""``Runner(visualizer=...)`` and ``Runner(log_processor=...)`` (MMEngine's arguments) say what
to pass instead, as ``hookline train`` does for the config keys."""

from __future__ import annotations

import pytest
import torch

from hookline import ConfigError, Runner


@pytest.mark.parametrize(("name", "value", "match"), [
    ("visualizer", {"type": "Visualizer"}, r"'visualizer'.*runner\.visualizer.*TensorboardLoggerHook"),
    ("log_processor", {"window_size": 20}, r"'log_processor'.*LoggerHook.*window_size"),
])
def test_mmengine_arguments_explained(tmp_path, name, value, match):
    with pytest.raises(ConfigError, match=match):
        Runner(torch.nn.Linear(4, 2), work_dir=tmp_path, **{name: value})
