"""resume= given a plain ``torch.save(model.state_dict())`` file: the error says to load its
weights with load_from= instead (MMEngine's ``resume=True, load_from=...`` habit too)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.engine.checkpoint import CheckpointError


def make(work_dir, **kwargs) -> Runner:
    torch.manual_seed(0)
    x = torch.randn(16, 4)
    return Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(TensorDataset(x, (x[:, 0] > 0).long()),
                                              batch_size=8),
                  max_epochs=1, work_dir=work_dir,
                  default_hooks={"progress": None, "logger": None}, **kwargs)


@pytest.mark.parametrize("how", ["resume=path", "resume=True, load_from=path"])
def test_resuming_a_plain_state_dict_says_to_use_load_from(tmp_path, how):
    pretrained = tmp_path / "pretrained.pth"
    torch.save(torch.nn.Linear(4, 2).state_dict(), pretrained)
    kwargs = {"resume": pretrained} if how == "resume=path" else \
        {"resume": True, "load_from": pretrained}
    with pytest.raises(CheckpointError) as caught:
        make(tmp_path / "run", **kwargs).train()
    message = str(caught.value)
    assert message.startswith(f"cannot load checkpoint {str(pretrained)!r}: not a hookline "
                              "checkpoint: no 'meta' dict")
    assert "it holds weights only" in message and "use load_from= to load the weights only" \
        in message
    assert not (tmp_path / "run").exists()
    runner = make(tmp_path / "tuned", load_from=pretrained)  # what the message says works
    runner.train()
    assert runner.epoch == 1

