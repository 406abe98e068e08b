"""``self.model.optimizer`` of a Keras callback in a hookline run: the torch optimizer as Keras's.

``learning_rate`` reads and writes the first param group's rate (assigning
scales every group, their ratios kept: :func:`lr_ratios`), with the Keras
variable's ``assign`` / ``numpy()``; ``iterations`` counts training steps.

Example::

    >>> import torch
    >>> optimizer = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    >>> keras_optimizer = KerasOptimizer(optimizer, steps_done=lambda: 7)
    >>> keras_optimizer.learning_rate.assign(0.05)
    >>> optimizer.param_groups[0]["lr"], int(keras_optimizer.iterations.numpy())
    (0.05, 7)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from hookline.core import ConfigError

__all__ = ["RATIO_KEY", "Iterations", "KerasOptimizer", "LearningRate", "MultiOptimizer", "lr_ratios"]


class LearningRate(float):
    """``optimizer.learning_rate`` as read: a float of the rate then, with the methods of the
    Keras variable it stands for, which read and write the optimizer now: ``assign(value)``
    (also ``assign_add`` / ``assign_sub``) sets the rate of every param group as assigning
    ``optimizer.learning_rate`` does; ``numpy()`` and ``value`` give the current rate.

    Example::

        >>> net = torch.nn.Linear(2, 1)
        >>> sgd = torch.optim.SGD(net.parameters(), lr=0.1)
        >>> rate = KerasOptimizer(sgd).learning_rate
        >>> rate.assign(rate * 0.5); rate.value, sgd.param_groups[0]["lr"]
        (0.05, 0.05)
    """

    def __new__(cls, optimizer: KerasOptimizer) -> LearningRate:
        rate = super().__new__(cls, optimizer.current_rate())
        rate._optimizer = optimizer
        return rate

    _optimizer: KerasOptimizer

    @property
    def value(self) -> float:
        return self._optimizer.current_rate()

    def numpy(self) -> np.ndarray:
        """The current rate as a 0-d float32 array (what a Keras variable's ``numpy()`` gives)."""
        return np.asarray(self._optimizer.current_rate(), dtype=np.float32)

    def assign(self, value: Any) -> None:
        self._optimizer.learning_rate = value

    def assign_add(self, delta: Any) -> None:
        self.assign(self.value + float(np.asarray(delta)))

    def assign_sub(self, delta: Any) -> None:
        self.assign(self.value - float(np.asarray(delta)))

    def __reduce__(self) -> tuple[Any, ...]:  # pickles and copies as the float it is
        return (float, (float(self),))


class Iterations(int):
    """``optimizer.iterations``: an int of the steps so far, with ``numpy()`` as a Keras variable
    has (an int64 0-d array)."""

    def numpy(self) -> np.ndarray:
        return np.asarray(int(self), dtype=np.int64)

    def __reduce__(self) -> tuple[Any, ...]:
        return (int, (int(self),))


class KerasOptimizer:
    """Keras's ``model.optimizer`` over one torch optimizer: ``learning_rate`` reads and writes
    its param groups (the ratios between groups are kept)."""

    def __init__(self, optimizer: torch.optim.Optimizer, name: str | None = None,
                 steps_done: Callable[[], int] | None = None) -> None:
        self.optimizer = optimizer
        self.name = name or type(optimizer).__name__.lower()
        self._steps_done = steps_done

    def current_rate(self) -> float:
        """The first param group's learning rate."""
        return float(self.optimizer.param_groups[0]["lr"])

    @property
    def learning_rate(self) -> LearningRate:
        """The rate as a float with Keras's ``assign`` / ``numpy`` (:class:`LearningRate`)."""
        return LearningRate(self)

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        new = float(np.asarray(value))
        groups = self.optimizer.param_groups
        for group, ratio in zip(groups, lr_ratios(self.optimizer)):
            group["lr"] = new * ratio

    # Keras 2 spelling, still read by some callbacks
    lr = learning_rate

    @property
    def iterations(self) -> Iterations:
        """Training steps so far (:meth:`_steps`), an int with ``numpy()``."""
        return Iterations(self._steps())

    def _steps(self) -> int:
        """Training steps so far, as Keras counts them (``runner.iter`` in a run: every
        optimizer, every batch, accumulated or not; without a run, the torch optimizer's
        step count of its first parameter, which SGD does not keep)."""
        if self._steps_done is not None:
            return int(self._steps_done())
        for group in self.optimizer.param_groups:
            for param in group["params"]:
                step = self.optimizer.state.get(param, {}).get("step")
                if step is not None:
                    return int(step)
        return 0

    def __repr__(self) -> str:
        return (f"<KerasOptimizer {type(self.optimizer).__name__} "
                f"learning_rate={self.current_rate():g}>")


#: the key under which a param group keeps its learning rate's ratio to the first group's
RATIO_KEY = "hookline_lr_ratio"


def lr_ratios(optimizer: torch.optim.Optimizer) -> list[float]:
    """Each param group's learning rate over the first group's, for setting them all from one
    rate: read from the current rates when the first is not 0 (and kept on the groups under
    :data:`RATIO_KEY`, saved with the optimizer's state), else the kept ratios, else the
    groups' ``initial_lr`` (set by torch schedulers). A warmup through 0 keeps them.

    Example::

        >>> net = torch.nn.Linear(2, 1)
        >>> sgd = torch.optim.SGD([{"params": [net.weight], "lr": 0.01},
        ...                        {"params": [net.bias], "lr": 0.1}])
        >>> KerasOptimizer(sgd).learning_rate = 0.0
        >>> KerasOptimizer(sgd).learning_rate = 0.02
        >>> [round(group["lr"], 6) for group in sgd.param_groups]
        [0.02, 0.2]
    """
    groups = optimizer.param_groups
    first = float(groups[0]["lr"])
    if first != 0:
        for group in groups:
            group[RATIO_KEY] = 1.0 if group is groups[0] else float(group["lr"]) / first
        return [float(group[RATIO_KEY]) for group in groups]
    if all(RATIO_KEY in group for group in groups):
        return [float(group[RATIO_KEY]) for group in groups]
    initial = [group.get("initial_lr") for group in groups]
    if all(isinstance(lr, (int, float)) for lr in initial) and initial[0]:
        return [float(lr) / float(initial[0]) for lr in initial]  # type: ignore[arg-type]
    if all(float(group["lr"]) == 0 for group in groups):
        return [1.0] * len(groups)
    rates = [float(group["lr"]) for group in groups]
    raise ConfigError(
        f"a Keras callback set the learning rate of {type(optimizer).__name__}, whose first "
        f"param group has lr 0 and the others {rates[1:]}: the rate set is the first group's "
        "and the others follow at their ratio to it, which a rate of 0 does not give; start "
        "the first group at a rate above 0, or give every group an 'initial_lr'")


class MultiOptimizer:
    """Several optimizers: Keras's LR callbacks visit ``optimizers`` one by one."""

    def __init__(self, optimizers: Sequence[KerasOptimizer]) -> None:
        self.optimizers = list(optimizers)

    @property
    def learning_rate(self) -> LearningRate:
        return self.optimizers[0].learning_rate
