"""DistSamplerSeedHook: gives the training sampler its epoch, for a new order each epoch.

Example::

    >>> from hookline.hooks import DistSamplerSeedHook
    >>> DistSamplerSeedHook().triggered_stages()
    ['before_train_epoch']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookline.engine.data import set_epoch
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


@HOOKS.register()
class DistSamplerSeedHook(Hook):
    """Calls ``set_epoch(runner.epoch)`` on the training sampler (any sampler that has
    it, e.g. ``DistributedSampler``). The Runner's own sampler already receives the
    epoch from the loop, so for it this is a harmless repeat, kept so that MMEngine
    configs work unchanged."""

    priority = "NORMAL"

    def before_train_epoch(self, runner: Runner) -> None:
        if runner.by_epoch:
            set_epoch(runner.train_dataloader, runner.epoch)
