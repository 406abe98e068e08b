"""``mmengine.runner.utils``: ``set_random_seed``, as MMEngine's.

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.runner.utils import set_random_seed
    >>> set_random_seed(3)
    3
    >>> a = torch.rand(1); _ = set_random_seed(3); bool(torch.rand(1) == a)
    True
"""

from __future__ import annotations

import torch

from hookline.engine.environment import seed_everything

from ..dist import get_rank, sync_random_seed
from ..logging import print_log

__all__ = ["set_random_seed"]


def set_random_seed(seed: int | None = None, deterministic: bool = False,
                    diff_rank_seed: bool = False) -> int:
    """Seed ``random``, numpy and torch (every device) and return the seed: ``seed``, or one
    drawn on rank 0 and shared by all ranks when None; plus the rank with ``diff_rank_seed``.
    ``deterministic`` also makes cuDNN and torch choose deterministic algorithms."""
    if seed is None:
        seed = sync_random_seed()
    if diff_rank_seed:
        seed += get_rank()
    seed_everything(seed)
    if deterministic:
        if torch.backends.cudnn.benchmark:
            print_log("torch.backends.cudnn.benchmark is set to False so that cuDNN chooses "
                      "its algorithms deterministically", logger="current")
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.use_deterministic_algorithms(True)
    return seed
