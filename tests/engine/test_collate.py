"""A dataloader config names its collate function as MMEngine's configs do
(``collate_fn={"type": "pseudo_collate"}``): torch's ``default_collate`` and MMEngine's
``pseudo_collate`` are registered, a project's own (registered in MMEngine's ``FUNCTIONS``)
is found too, and a wrong name is one ConfigError before anything is built."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils.data import Dataset

from hookline import ConfigError, Runner
from hookline.engine.collate import pseudo_collate

QUIET = {"logger": None, "progress": None, "checkpoint": None}


class DataSample:
    """Stands in for MMEngine's data samples: an object a collate cannot stack."""

    def __init__(self, boxes: int) -> None:
        self.boxes = boxes


class Samples(Dataset):
    """MMEngine-style samples: a dict with inputs and a data sample."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {"inputs": torch.full((2,), float(index)), "data_samples": DataSample(index % 3)}


class ListModel(torch.nn.Module):
    """A model whose step batches the lists itself (MMEngine's data_preprocessor's job)."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
        self.seen: list[tuple[type, int]] = []

    def train_step(self, data: dict[str, Any], optim_wrapper: Any) -> dict[str, torch.Tensor]:
        self.seen.append((type(data["inputs"]), len(data["data_samples"])))
        loss = self.layer(torch.stack(data["inputs"])).pow(2).mean()
        optim_wrapper.update_params(loss)
        return {"loss": loss}


def run(tmp_path, collate_fn: Any) -> ListModel:
    model = ListModel()
    Runner(model, optimizer={"type": "SGD", "lr": 0.1}, max_epochs=1, work_dir=str(tmp_path),
           default_hooks=QUIET,
           train_dataloader={"dataset": Samples(), "batch_size": 4,
                             "collate_fn": collate_fn}).train()
    return model


def test_pseudo_collate_by_name_keeps_lists(tmp_path) -> None:
    assert run(tmp_path, {"type": "pseudo_collate"}).seen == [(list, 4), (list, 4)]


def test_a_function_registered_in_mmengines_functions_is_found(tmp_path) -> None:
    from hookline.compat.mmengine.registry import FUNCTIONS  # noqa: PLC0415

    @FUNCTIONS.register_module(force=True)
    def listing_collate(samples, keep=4):
        assert keep == 4
        return pseudo_collate(samples)

    assert run(tmp_path, {"type": "listing_collate", "keep": 4}).seen == [(list, 4)] * 2


@pytest.mark.parametrize("spec, message", [
    ({"type": "pseudo_colate"}, "did you mean 'pseudo_collate'"),
    ({"name": "pseudo_collate"}, "must be a function or a config such as"),
])
def test_a_wrong_collate_fn_config_is_one_error_before_training(tmp_path, spec, message) -> None:
    with pytest.raises(ConfigError, match=message):
        run(tmp_path, spec)
    assert not list(tmp_path.glob("*.pth"))
