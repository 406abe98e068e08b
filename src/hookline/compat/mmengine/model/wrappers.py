"""``mmengine.model.wrappers``: ``is_model_wrapper`` and the DDP wrapper's name.

A hookline Runner's ``runner.model`` is always the user's model (the DDP
wrapper is kept apart), so ``is_model_wrapper(runner.model)`` is False and
a hook's ``model.module`` branch is simply not taken.

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.model import is_model_wrapper
    >>> net = torch.nn.Linear(2, 2)
    >>> is_model_wrapper(net), is_model_wrapper(torch.nn.DataParallel(net))
    (False, True)
"""

from __future__ import annotations

from typing import Any

import torch

from ..registry import MODEL_WRAPPERS, Registry


class MMDistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """MMEngine's DDP class name: plain ``DistributedDataParallel``."""


MODEL_WRAPPERS.add_builtins({
    "DistributedDataParallel": torch.nn.parallel.DistributedDataParallel,
    "DataParallel": torch.nn.DataParallel,
    "MMDistributedDataParallel": MMDistributedDataParallel,
})


def _wrapper_classes(registry: Registry) -> list[type]:
    classes = [obj for obj in (*registry.module_dict.values(), *registry.builtins.values())
               if isinstance(obj, type)]
    for child in registry.children.values():
        if isinstance(child, Registry):
            classes += _wrapper_classes(child)
    return classes


def is_model_wrapper(model: Any, registry: Registry = MODEL_WRAPPERS) -> bool:
    """Whether ``model`` is an instance of a class in ``registry`` (or its children):
    ``DistributedDataParallel``, ``DataParallel`` and anything registered there."""
    return isinstance(model, tuple(_wrapper_classes(registry)))


__all__ = ["MMDistributedDataParallel", "is_model_wrapper"]
