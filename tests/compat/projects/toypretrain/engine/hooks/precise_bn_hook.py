import io
import itertools
import logging
from typing import Optional, Sequence

import torch
import torch.nn as nn
from torch.nn.modules.batchnorm import _BatchNorm

import hookline.compat.mmengine as mmengine
from hookline.compat.mmengine.hooks import Hook
from hookline.compat.mmengine.logging import print_log
from hookline.compat.mmengine.model import is_model_wrapper
from hookline.compat.mmengine.runner import EpochBasedTrainLoop, IterBasedTrainLoop, Runner
from hookline.compat.mmengine.utils import ProgressBar
from toypretrain.registry import HOOKS

DATA_BATCH = Optional[Sequence[dict]]


@torch.no_grad()
def update_bn_stats(model: nn.Module, loader, num_samples: int = 8192, logger=None) -> None:
    """Recompute BatchNorm statistics as the plain mean over ``num_samples`` samples."""
    if is_model_wrapper(model):
        model = model.module
    rank, world_size = mmengine.dist.get_dist_info()
    num_iter = min(num_samples // (loader.batch_size * world_size), len(loader))
    bn_layers = [m for m in model.modules() if m.training and isinstance(m, _BatchNorm)]
    if not bn_layers:
        print_log('No BN found in model', logger=logger, level=logging.WARNING)
        return
    running_means = [torch.zeros_like(bn.running_mean) for bn in bn_layers]
    running_vars = [torch.zeros_like(bn.running_var) for bn in bn_layers]
    momentums = [bn.momentum for bn in bn_layers]
    for bn in bn_layers:
        bn.momentum = 1.0
    prog_bar = ProgressBar(num_iter, file=io.StringIO()) if rank == 0 else None
    for data in itertools.islice(loader, num_iter):
        data = model.data_preprocessor(data, False)
        model(*data)
        for i, bn in enumerate(bn_layers):
            running_means[i] += bn.running_mean / num_iter
            running_vars[i] += bn.running_var / num_iter
        if prog_bar is not None:
            prog_bar.update()
    for i, bn in enumerate(bn_layers):
        bn.running_mean = running_means[i]
        bn.running_var = running_vars[i]
        bn.momentum = momentums[i]


@HOOKS.register_module()
class PreciseBNHook(Hook):
    """Recomputes BN statistics with the weights fixed, every ``interval`` epochs/iterations."""

    def __init__(self, num_samples: int = 8192, interval: int = 1) -> None:
        assert interval > 0 and num_samples > 0
        self.interval = interval
        self.num_samples = num_samples

    def _perform_precise_bn(self, runner: Runner) -> None:
        print_log(f'Running Precise BN for {self.num_samples} samples...', logger=runner.logger)
        update_bn_stats(runner.model, runner.train_loop.dataloader, self.num_samples,
                        logger=runner.logger)

    def after_train_epoch(self, runner: Runner) -> None:
        if isinstance(runner.train_loop, EpochBasedTrainLoop) and self.every_n_epochs(
                runner, self.interval):
            self._perform_precise_bn(runner)

    def after_train_iter(self, runner, batch_idx: int, data_batch: DATA_BATCH = None,
                         outputs: Optional[dict] = None) -> None:
        if isinstance(runner.train_loop, IterBasedTrainLoop) and self.every_n_train_iters(
                runner, self.interval):
            self._perform_precise_bn(runner)
