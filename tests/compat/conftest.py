"""Shared pieces of the compat tests.

``projects/`` holds small downstream packages written in the style of the
OpenMMLab projects (``toydet`` ~ mmdet 3.x, ``toypretrain`` ~ mmpretrain,
``toyyolo`` ~ mmyolo, ``toypose`` ~ mmpose, ``toycv`` ~ mmcv 1.x / mmdet 2.x,
``toyengine`` ~ MMEngine's own hook files), each "ported" by the port rule
alone: their imports name ``hookline.compat.mmengine`` / ``hookline.compat.mmcv``
where the originals name ``mmengine`` / ``mmcv``. They are top-level packages
(as the real ones are), so registry scopes are inferred from their names.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner

PROJECTS = Path(__file__).parent / "projects"
if str(PROJECTS) not in sys.path:
    sys.path.insert(0, str(PROJECTS))


def toy_data(n: int = 64, seed: int = 0) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


def make_runner(work_dir=None, *, model=None, hooks=(), **kwargs):
    """A small quiet run: 64 samples, batches of 8, 2 epochs, SGD, cross entropy."""
    torch.manual_seed(0)
    data = toy_data()
    options = dict(optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
                   max_epochs=2, train_dataloader=DataLoader(data, batch_size=8),
                   work_dir=work_dir or tempfile.mkdtemp(), device="cpu", hooks=list(hooks))
    options.update(kwargs)
    defaults = {"logger": None, "progress": None, "checkpoint": None}
    defaults.update(options.pop("default_hooks", {}))
    return Runner(model if model is not None else torch.nn.Linear(4, 2),
                  default_hooks=defaults, **options)


@pytest.fixture
def runner_factory(tmp_path):
    def factory(**kwargs):
        return make_runner(tmp_path, **kwargs)
    return factory
