"""The learning rates of a run with several optimizers (an ``OptimWrapperDict``) reach the
log line, ``metrics.jsonl`` and ``vis_data`` as MMEngine names them: ``generator.lr``,
``discriminator.lr`` (the first param group's rate of each)."""

from __future__ import annotations

import json
import re

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.compat.mmengine.hooks import LoggerHook as MMEngineLoggerHook
from hookline.hooks import LoggerHook
from hookline.hooks.log_steps import current_lrs, is_lr_key


class GAN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.generator, self.discriminator = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)

    def train_step(self, data, optim_wrapper):
        (noise,) = data
        d_loss = F.softplus(self.discriminator(self.generator(noise).detach())).mean()
        optim_wrapper["discriminator"].update_params(d_loss)
        g_loss = F.softplus(-self.discriminator(self.generator(noise))).mean()
        optim_wrapper["generator"].update_params(g_loss)
        return {"loss_disc": d_loss.detach(), "loss_gen": g_loss.detach()}


def run(tmp_path, logger) -> Runner:
    optim = {"generator": {"optimizer": {"type": "Adam", "lr": 1e-3}},
             "discriminator": {"optimizer": {"type": "SGD", "lr": 2e-3}}}
    schedule = {"generator": [{"type": "StepLR", "step_size": 2, "gamma": 0.5, "by_epoch": False}]}
    runner = Runner(GAN(), optim_wrapper=optim, param_scheduler=schedule, max_iters=4,
                    train_dataloader=DataLoader(TensorDataset(torch.randn(16, 2)), batch_size=4),
                    work_dir=tmp_path, device="cpu",
                    default_hooks={"logger": logger, "progress": None, "checkpoint": None})
    runner.train()
    return runner


def test_log_lines_and_records_carry_each_optimizers_rate(tmp_path):
    runner = run(tmp_path, LoggerHook(interval=2))
    lines = [line.split(" - INFO - ", 1)[1]
             for line in (tmp_path / "log.txt").read_text().splitlines() if "Iter(train)" in line]
    # the rate the iteration ran with: StepLR halves the generator's every 2 iterations
    assert [re.match(r"Iter\(train\) \[\d/4\]  (generator\.lr: \S+  discriminator\.lr: \S+)  eta",
                     line).group(1) for line in lines] == [
        "generator.lr: 1.0000e-03  discriminator.lr: 2.0000e-03",
        "generator.lr: 5.0000e-04  discriminator.lr: 2.0000e-03"]
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["generator.lr"], r["discriminator.lr"]) for r in records] == [
        (1e-3, 2e-3), (5e-4, 2e-3)]
    assert current_lrs(runner) == {"generator.lr": 2.5e-4, "discriminator.lr": 2e-3}


def test_vis_data_scalars_of_mmengines_logger_hold_them(tmp_path):
    runner = run(tmp_path, MMEngineLoggerHook(interval=2))
    scalars = [json.loads(line) for line in
               (runner.log_dir / "vis_data" / "scalars.json").read_text().splitlines()]
    assert [(s["generator.lr"], s["discriminator.lr"], s["step"]) for s in scalars] == [
        (1e-3, 2e-3, 2), (5e-4, 2e-3, 4)]


def test_which_keys_a_line_shows_as_rates():
    assert [is_lr_key(k) for k in ("lr", "lr_group1", "generator.lr", "loss_gen", "iter",
                                   "memory")] == [True, True, True, False, False, False]
