"""A tiny ``LightningModule`` and its data, shared by the tests of LightningModules in a Runner.

Importing this skips the importing test module when Lightning is not installed.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

pl = pytest.importorskip("lightning.pytorch")

X = torch.arange(6, dtype=torch.float32).unsqueeze(1) / 6


def loader() -> DataLoader:
    """y = 2x + 1 on six points, in batches of 4 and 2."""
    return DataLoader(TensorDataset(X, 2 * X + 1), batch_size=4)


class TinyRegressor(pl.LightningModule):
    """``Linear(1, 1)`` (seeded) fitting :func:`loader`'s data; logs ``val_loss`` and ``test_loss``."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(1, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self.layer(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.mse_loss(self.layer(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", F.mse_loss(self.layer(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
