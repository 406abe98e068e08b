"""LoggerHook averages only MMEngine's ``mean_pattern`` keys (losses, times, grad_norm); other
values show their latest, as MMEngine 0.10.7 does (/tmp/probe4_vis/mm_run.py: ``custom``
logged as the iteration number shows 4.0 and 9.0 at iterations 5 and 10)."""

from __future__ import annotations

import json

import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.engine.hook import Hook
from hookline.hooks import LoggerHook


class _Custom(Hook):
    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        runner.message_hub.update_scalar("train/custom", float(runner.iter))
        runner.message_hub.update_scalar("train/my_loss", float(runner.iter))


def test_non_mean_keys_log_their_latest_value(tmp_path):
    data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    runner = Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_iters=12,
                    train_dataloader=DataLoader(data, batch_size=4), work_dir=tmp_path,
                    device="cpu", hooks=[_Custom()],
                    default_hooks={"logger": LoggerHook(interval=5), "checkpoint": None,
                                   "progress": None})
    runner.train()
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["custom"] for r in records] == [4.0, 9.0, 11.0]
    assert [r["my_loss"] for r in records] == [2.0, 7.0, 10.5]  # a loss: averaged
    assert "custom: 9.0000" in (tmp_path / "log.txt").read_text()
