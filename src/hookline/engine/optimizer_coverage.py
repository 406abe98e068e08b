"""At the start of training: does the optimizer update the model that trains?

A model assigned to ``runner.model`` after the Runner was built, an optimizer
built over another model's parameters, or parameter groups that leave some
trainable parameters out all train silently wrong: the loss goes down for the
parameters the optimizer holds, or not at all. :func:`check_optimizer_coverage`
says so once, as training starts:

* none of the optimizers' parameters belong to the model: a ``ConfigError``
  (nothing would train);
* some trainable parameters (``requires_grad=True``) of the model are in no
  optimizer: one warning per Runner naming how many and the first few.

Parameters frozen as training starts are not asked for: an optimizer built
from a config holds them anyway (MMEngine's rule, so one unfrozen later
trains), and a hand-built one may leave them out on purpose.

Several optimizers (``OptimWrapperDict``, a GAN's own ``train_step``) are
checked together: a parameter counts as updated when any of them holds it.
A model wrapped in ``DistributedDataParallel`` is compared by the module inside.

Example::

    >>> import logging, torch
    >>> from hookline.engine.optim_wrapper import OptimWrapper
    >>> model = torch.nn.Linear(2, 2)
    >>> wrapper = OptimWrapper(torch.optim.SGD([model.weight], lr=0.1))
    >>> check_optimizer_coverage(model, wrapper, logging.getLogger("doc"))
    ['bias']
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from hookline.core import ConfigError

from .distributed import unwrap_model

__all__ = ["check_optimizer_coverage", "optimizers_of"]

#: how many names of parameters no optimizer updates the warning lists
SHOWN = 5


def optimizers_of(wrapper: Any) -> list[torch.optim.Optimizer]:
    """The ``torch.optim.Optimizer`` objects of an ``OptimWrapper`` or an
    ``OptimWrapperDict`` (each of its wrappers'), in order.

    Example::

        >>> from hookline.engine.optim_wrapper import OptimWrapper
        >>> sgd = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
        >>> optimizers_of(OptimWrapper(sgd)) == [sgd]
        True
    """
    inner = getattr(wrapper, "optim_wrappers", None)
    wrappers: Iterable[Any] = inner.values() if isinstance(inner, Mapping) else [wrapper]
    found = (getattr(each, "optimizer", None) for each in wrappers)
    return [optimizer for optimizer in found if isinstance(optimizer, torch.optim.Optimizer)]


def _optimized_ids(optimizers: Iterable[torch.optim.Optimizer]) -> set[int]:
    """The ids of every parameter in any param group of ``optimizers``."""
    return {id(param) for optimizer in optimizers for group in optimizer.param_groups
            for param in group["params"]}


def check_optimizer_coverage(model: torch.nn.Module, wrapper: Any, logger: logging.Logger,
                             *, warn: bool = True, extra: Any = None) -> list[str]:
    """Check that the optimizers of ``wrapper`` update ``model`` (see the module docstring);
    returns the names of its trainable parameters no optimizer holds.

    ``extra``: another module whose parameters an optimizer may legitimately hold (the
    loss function). ``warn=False``: no warning (it was given already); the error is
    raised all the same. Nothing is checked without an optimizer (a model's own
    ``train_step`` that needs none) or when the model has no trainable parameter.
    """
    optimizers = optimizers_of(wrapper)
    held = _optimized_ids(optimizers)
    model = unwrap_model(model)
    trainable = [(name, param) for name, param in model.named_parameters()
                 if param.requires_grad]
    if not held or not trainable:
        return []
    known = {id(param) for param in model.parameters()}
    if isinstance(extra, torch.nn.Module):
        known |= {id(param) for param in extra.parameters()}
    if not held & known:
        raise ConfigError(
            f"none of the optimizer's {len(held)} parameter tensors belong to runner.model "
            f"({type(model).__name__}): the optimizer was built over another model (was "
            "runner.model assigned after the Runner was built?), so training would update "
            "nothing of this model. Build a new Runner with the new model (Runner(new_model, "
            "optimizer={...}, ...)), or pass an optimizer over the new model's parameters")
    missing = [name for name, param in trainable if id(param) not in held]
    if missing and warn:
        shown = ", ".join(missing[:SHOWN]) + (", ..." if len(missing) > SHOWN else "")
        logger.warning(
            "%d of the model's %d trainable parameters are in no optimizer's param groups, so "
            "training does not update them: %s (set requires_grad=False on parameters meant "
            "to stay frozen, or add them to the optimizer)", len(missing), len(trainable), shown)
    return missing


def check_training_wrapper(model: torch.nn.Module, ddp_model: torch.nn.Module | None) -> None:
    """On several processes, what trains (``runner.ddp_model``: the
    ``DistributedDataParallel`` wrapper built with the Runner, around the model or a step
    module holding it) must hold ``runner.model``'s parameters still: a model assigned
    later would not be trained (``ConfigError``, naming the fix).

    Example::

        >>> net = torch.nn.Linear(2, 2)
        >>> check_training_wrapper(net, None)  # one process: nothing wraps the model
    """
    if not isinstance(ddp_model, torch.nn.Module):
        return
    wrapped = {id(param) for param in ddp_model.parameters()}
    own = {id(param) for param in unwrap_model(model).parameters()}
    if wrapped and own and not wrapped & own:  # the wrapper holds the model (or a step module)
        raise ConfigError(
            "runner.model was assigned after the Runner was built, and the "
            "DistributedDataParallel wrapper that trains still wraps the model it was built "
            "with: build a new Runner with the new model")
