"""A dataset config whose dataset has no length (a TensorDataset given no tensors, which a
config file cannot give) is one ConfigError naming the loader, before anything is written."""

from __future__ import annotations

import pytest
import torch

from hookline import ConfigError, Runner


def test_a_tensor_dataset_config_without_tensors_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match=r"train_dataloader: the dataset built from "
                                          r"\{'type': 'TensorDataset'\} has no length") as caught:
        Runner(model=torch.nn.Linear(4, 2), work_dir=tmp_path / "run",
               train_dataloader={"dataset": {"type": "TensorDataset"}, "batch_size": 2},
               loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1,
               optimizer={"type": "SGD", "lr": 0.1})
    assert "register a dataset class" in str(caught.value)
    assert not (tmp_path / "run").exists()
