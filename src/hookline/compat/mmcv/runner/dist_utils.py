"""``mmcv.runner.dist_utils``: ranks, ``master_only`` and parameter all-reduce.

Example::

    >>> from hookline.compat.mmcv.runner import get_dist_info, master_only
    >>> @master_only
    ... def save():
    ...     return "saved"
    >>> get_dist_info(), save()
    ((0, 1), 'saved')
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ...mmengine.dist import all_reduce_params, get_dist_info, master_only


def allreduce_params(params: Iterable[torch.Tensor], coalesce: bool = True,
                     bucket_size_mb: int = -1) -> None:
    """Average parameters or buffers over all ranks, in place (mmcv's helper)."""
    all_reduce_params(params, coalesce=coalesce, op="mean")


def allreduce_grads(params: Iterable[torch.nn.Parameter], coalesce: bool = True,
                    bucket_size_mb: int = -1) -> None:
    """Average the gradients of ``params`` over all ranks, in place."""
    grads = [p.grad for p in params if p.requires_grad and p.grad is not None]
    all_reduce_params(grads, coalesce=coalesce, op="mean")


__all__ = ["allreduce_grads", "allreduce_params", "get_dist_info", "master_only"]
