"""The optimizer wrapper and parameter schedulers of a run, built in one place.

``optimizer`` / ``optim_wrapper`` configs, else the model's
``configure_optimizers()`` (Lightning's; an ``optim_wrapper`` config without
``"optimizer"`` wraps its optimizers; run inside :func:`adapt_model`, so that
a LightningModule can read ``self.trainer.estimated_stepping_batches``), then
``param_scheduler`` with the lengths left to the run filled in
(:mod:`~hookline.engine.schedule_length`), then the check that no scheduler is
outrun by the training length.

Example::

    >>> import torch
    >>> from types import SimpleNamespace
    >>> from hookline.engine.optimization import build_run_optimization
    >>> runner = SimpleNamespace(model=torch.nn.Linear(2, 1), metrics={}, train_loop=None)
    >>> wrapper, schedulers = build_run_optimization(
    ...     runner, {"type": "SGD", "lr": 0.1}, None,
    ...     {"type": "StepLR", "step_size": 2})
    >>> type(wrapper).__name__, [type(s).__name__ for s, by_epoch in schedulers]
    ('OptimWrapper', ['StepLR'])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .build import build_schedulers
from .configure_optimizers import build_optimization
from .model_adapters import adapt_model
from .schedule_length import SchedulerSteps, check_run_length, fill_run_lengths
from .schedulers_per_optimizer import per_optimizer, wrapper_names

if TYPE_CHECKING:  # pragma: no cover
    from .optim_wrapper import OptimWrapperLike


def build_run_optimization(runner: Any, optimizer: Any, optim_wrapper: Any,
                           param_scheduler: Any
                           ) -> tuple[OptimWrapperLike | None, list[tuple[Any, bool]]]:
    """``(optimizer wrapper, [(scheduler, by_epoch), ...])`` for ``runner`` (its ``model``,
    ``metrics`` and ``train_loop`` are built already)."""
    with adapt_model(runner):
        wrapper, schedulers = build_optimization(optimizer, optim_wrapper, runner.model)
    steps = SchedulerSteps.of_run(runner.train_loop, wrapper)  # lengths left to the run
    names = wrapper_names(wrapper)
    if names is None:
        schedulers = schedulers + build_schedulers(fill_run_lengths(param_scheduler, steps),
                                                   getattr(wrapper, "optimizer", None))
    else:  # an OptimWrapperDict: by optimizer name, or the same list for each (MMEngine's)
        for name, spec in per_optimizer(param_scheduler, names):
            schedulers = schedulers + build_schedulers(
                fill_run_lengths(spec, steps, f"param_scheduler.{name}"),
                wrapper[name].optimizer)  # type: ignore[index]
    check_run_length(schedulers, steps)  # a OneCycleLR the run outlasts: an error now
    return wrapper, schedulers
