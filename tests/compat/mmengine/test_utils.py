"""hookline.compat.mmengine.utils / config / device / visualization."""

from __future__ import annotations

import io
import json

import pytest
import torch

import hookline.compat.mmengine as mmengine
from hookline import ConfigError
from hookline.compat.mmengine.config import Config, ConfigDict
from hookline.compat.mmengine.device import get_device, get_max_cuda_memory, is_cuda_available
from hookline.compat.mmengine.utils import (
    ProgressBar,
    digit_version,
    is_method_overridden,
    is_seq_of,
    mkdir_or_exist,
    scandir,
    to_2tuple,
)
from hookline.compat.mmengine.visualization import LocalVisBackend, Visualizer


def test_type_checks_and_helpers(tmp_path):
    assert is_seq_of([1, 2], int) and not is_seq_of([1, "a"], int) and not is_seq_of(3, int)
    assert mmengine.is_list_of([1.0], float) and not mmengine.is_tuple_of([1], int)
    assert to_2tuple(3) == (3, 3) and to_2tuple((1, 2)) == (1, 2)
    mkdir_or_exist(tmp_path / "a" / "b")
    (tmp_path / "a" / "b" / "x.py").write_text("")
    assert list(scandir(tmp_path, ".py", recursive=True)) == ["a/b/x.py"]
    assert digit_version("2.1.0") > digit_version("2.1.0rc1") > digit_version("2.0")

    class Base:
        def run(self):
            pass

    class Child(Base):
        def run(self):
            pass

    assert is_method_overridden("run", Base, Child()) and not is_method_overridden("run", Base, Base)


def test_progress_bar_counts_to_the_end():
    out = io.StringIO()
    bar = ProgressBar(3, bar_width=6, file=out)
    for _ in range(3):
        bar.update()
    assert bar.completed == 3 and "[>>>>>>] 3/3" in out.getvalue()


def test_config(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("model:\n  type: Net\n  depth: 2\n")
    cfg = Config.fromfile(path)
    assert isinstance(cfg.model, ConfigDict) and cfg.model.depth == 2
    with pytest.raises(ConfigError, match="Python configs are not supported"):
        Config.fromfile(tmp_path / "run.py")
    with pytest.raises(AttributeError, match="no key 'optimizer'"):
        _ = cfg.optimizer


def test_device():
    assert get_device() in ("cuda", "mps", "cpu")
    assert is_cuda_available() == torch.cuda.is_available()
    assert get_max_cuda_memory() >= 0


def test_visualizer_backends_write_on_use(tmp_path):
    vis = Visualizer(name="compat-vis", vis_backends=[{"type": "LocalVisBackend",
                                                        "save_dir": tmp_path}])
    assert Visualizer.get_current_instance() is vis and Visualizer.get_instance("compat-vis") is vis
    assert isinstance(vis.get_backend("LocalVisBackend"), LocalVisBackend)
    vis.add_scalar("lr", 0.1, step=1)
    vis.add_config(ConfigDict(a=1))
    vis.add_image("img", torch.ones(3, 2, 2), step=4)  # CHW float
    assert json.loads((tmp_path / "scalars.json").read_text()) == {"lr": 0.1, "step": 1}
    assert (tmp_path / "config.py").read_text() == "a = 1\n"
    assert (tmp_path / "vis_image" / "img_4.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ConfigError, match="unknown vis backend"):
        Visualizer(vis_backends=[{"type": "WandbVisBackend"}], save_dir=tmp_path)
    with pytest.raises(ConfigError, match="1, 3 or 4 channels"):
        vis.add_image("bad", torch.zeros(5, 5, 5))
