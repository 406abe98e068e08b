"""A LightningModule trained under a mixed precision (``AmpOptimWrapper``, Lightning's
"bf16-mixed") validates and tests under the same autocast, as Lightning's precision plugin
does; a run that configures its val_loop / test_loop keeps its own choice."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hookline import Runner
from tests.integrations.lightning_toy import TinyRegressor, loader, pl  # noqa: F401


class DtypeSeen(TinyRegressor):
    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, list[torch.dtype]] = {"val": [], "test": []}

    def validation_step(self, batch, batch_idx):
        x, y = batch
        out = self.layer(x)
        self.seen["val"].append(out.dtype)
        self.log("val_loss", F.mse_loss(out.float(), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        out = self.layer(x)
        self.seen["test"].append(out.dtype)
        self.log("test_loss", F.mse_loss(out.float(), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _run(tmp_path, **kwargs) -> DtypeSeen:
    module = DtypeSeen()
    runner = Runner(module, optim_wrapper={"type": "AmpOptimWrapper", "dtype": "bfloat16"},
                    train_dataloader=loader(), val_dataloader=loader(),
                    test_dataloader=loader(), max_epochs=1, device="cpu", work_dir=tmp_path,
                    default_hooks={"progress": None, "checkpoint": None}, **kwargs)
    runner.train()
    runner.test()
    return module


def test_bf16_mixed_validates_and_tests_under_autocast(tmp_path):
    module = _run(tmp_path)
    assert module.seen["val"] and set(module.seen["val"]) == {torch.bfloat16}
    assert module.seen["test"] and set(module.seen["test"]) == {torch.bfloat16}


def test_an_explicit_eval_loop_keeps_full_precision(tmp_path):
    module = _run(tmp_path, val_loop={"fp16": False}, test_loop={"fp16": False})
    assert set(module.seen["val"]) == {torch.float32}
    assert set(module.seen["test"]) == {torch.float32}
