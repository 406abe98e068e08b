"""``self.model`` of a Keras callback in a hookline run: a facade over the torch model and the run.

What Keras's own callbacks read and write works on it:

- ``stop_training`` (read/write): ``runner.stop_training``;
- ``optimizer.learning_rate`` (read/write): the learning rate of the torch
  optimizer's first param group; assigning it scales every group (their
  ratios stay, through a rate of 0 too: :func:`lr_ratios`), so
  ``ReduceLROnPlateau`` and ``LearningRateScheduler`` work.
  Several optimizers (``OptimWrapperDict``) are ``optimizer.optimizers``;
  ``optimizer.iterations`` counts training steps as Keras does (``runner.iter``);
- ``get_weights()`` / ``set_weights(weights)``: numpy arrays of
  ``model.state_dict()``, in its order (parameters and buffers such as
  BatchNorm statistics, so ``EarlyStopping(restore_best_weights=True)``
  restores all of it);
- ``built`` (True), ``name``, ``metrics`` (for ``mode="auto"`` monitors),
  ``history`` (assignable); any other attribute is the torch model's.

Example::

    >>> import torch
    >>> from types import SimpleNamespace
    >>> from hookline.engine import OptimWrapper
    >>> net = torch.nn.Linear(2, 1)
    >>> run = SimpleNamespace(model=net, stop_training=False, metrics={},
    ...                       optim_wrapper=OptimWrapper(torch.optim.SGD(net.parameters(), lr=0.1)))
    >>> model = KerasModel(run)
    >>> model.optimizer.learning_rate = 0.05
    >>> run.optim_wrapper.param_groups[0]["lr"], model.stop_training
    (0.05, False)
    >>> [w.shape for w in model.get_weights()]
    [(1, 2), (1,)]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from hookline.core import ConfigError

__all__ = ["RATIO_KEY", "KerasModel", "KerasOptimizer", "lr_ratios"]

#: Keras model methods with no meaning on the facade, and what to use in hookline instead
_NOT_HERE = {
    "save": "CheckpointHook (or runner.save_checkpoint(path))",
    "save_weights": "CheckpointHook (or torch.save(runner.model.state_dict(), path))",
    "load_weights": "runner.load_checkpoint(path, resume=False) or load_from=",
    "fit": "runner.train()",
    "evaluate": "runner.val() / runner.test()",
    "predict": "runner.model(inputs)",
    "compile": "the Runner's optimizer=, loss_fn= and metrics= arguments",
}


class KerasOptimizer:
    """Keras's ``model.optimizer`` over one torch optimizer: ``learning_rate`` reads and writes
    its param groups (the ratios between groups are kept)."""

    def __init__(self, optimizer: torch.optim.Optimizer, name: str | None = None,
                 steps_done: Callable[[], int] | None = None) -> None:
        self.optimizer = optimizer
        self.name = name or type(optimizer).__name__.lower()
        self._steps_done = steps_done

    @property
    def learning_rate(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        new = float(np.asarray(value))
        groups = self.optimizer.param_groups
        for group, ratio in zip(groups, lr_ratios(self.optimizer)):
            group["lr"] = new * ratio

    # Keras 2 spelling, still read by some callbacks
    lr = learning_rate

    @property
    def iterations(self) -> int:
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
        return f"<KerasOptimizer {type(self.optimizer).__name__} learning_rate={self.learning_rate:g}>"


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


class _MultiOptimizer:
    """Several optimizers: Keras's LR callbacks visit ``optimizers`` one by one."""

    def __init__(self, optimizers: Sequence[KerasOptimizer]) -> None:
        self.optimizers = list(optimizers)

    @property
    def learning_rate(self) -> float:
        return self.optimizers[0].learning_rate


class _Direction:
    """What a ``mode="auto"`` monitor reads of a compiled metric: its name and direction."""

    def __init__(self, name: str, direction: str) -> None:
        self.name, self._direction = name, direction


def _optimizers(wrapper: Any) -> list[tuple[str | None, torch.optim.Optimizer]]:
    if wrapper is None:
        return []
    optimizer = getattr(wrapper, "optimizer", None)
    if isinstance(optimizer, torch.optim.Optimizer):
        return [(None, optimizer)]
    found: list[tuple[str | None, torch.optim.Optimizer]] = []
    for name, inner in getattr(wrapper, "items", lambda: [])():  # OptimWrapperDict
        if isinstance(getattr(inner, "optimizer", None), torch.optim.Optimizer):
            found.append((str(name), inner.optimizer))
    return found


class KerasModel:
    """Keras's ``self.model`` for callbacks running in ``runner`` (see the module docstring)."""

    def __init__(self, runner: Any) -> None:
        object.__setattr__(self, "_runner", runner)
        object.__setattr__(self, "history", None)

    # -- the run -------------------------------------------------------------------------------
    @property
    def module(self) -> torch.nn.Module:
        """The torch model being trained."""
        model: torch.nn.Module = self._runner.model
        return model

    @property
    def stop_training(self) -> bool:
        return bool(self._runner.stop_training)

    @stop_training.setter
    def stop_training(self, value: bool) -> None:
        self._runner.stop_training = bool(value)

    @property
    def optimizer(self) -> KerasOptimizer | _MultiOptimizer | None:
        found = _optimizers(self._runner.optim_wrapper)
        if not found:
            return None
        runner = self._runner

        def steps_done() -> int:
            return int(getattr(runner, "iter", 0))

        if len(found) == 1:
            return KerasOptimizer(found[0][1], steps_done=steps_done)
        return _MultiOptimizer([KerasOptimizer(opt, name, steps_done) for name, opt in found])

    @property
    def built(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return str(getattr(self.module, "name", type(self.module).__name__.lower()))

    @property
    def metrics(self) -> list[Any]:
        """The run's metrics as Keras's compiled metrics (name and direction), so that a
        ``mode="auto"`` monitor of ``val_accuracy`` knows higher is better."""
        keras = sys.modules.get("keras")
        if keras is None:
            return []
        known = []
        for name in getattr(self._runner, "metrics", {}) or {}:
            try:
                direction = getattr(keras.metrics.get(name), "_direction", None)
            except (ValueError, TypeError):
                continue
            if direction in ("up", "down"):
                known.append(_Direction(name, direction))
        from keras.src.trainers.compile_utils import MetricsList  # noqa: PLC0415  (keras is loaded)
        return [MetricsList(known)]

    # -- weights -------------------------------------------------------------------------------
    def _tensors(self) -> list[torch.Tensor]:
        return list(self.module.state_dict(keep_vars=True).values())

    def get_weights(self) -> list[np.ndarray]:
        """Copies of ``model.state_dict()``'s tensors as numpy arrays (one host copy each)."""
        return [t.detach().cpu().numpy().copy() for t in self._tensors()]

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Copy ``weights`` (as from :meth:`get_weights`) into the model, in place."""
        tensors = self._tensors()
        if len(weights) != len(tensors):
            raise ValueError(f"set_weights got {len(weights)} arrays; {type(self.module).__name__} "
                             f"has {len(tensors)} (its state_dict)")
        with torch.no_grad():
            for tensor, value in zip(tensors, weights):
                source = torch.as_tensor(np.asarray(value))
                if tuple(source.shape) != tuple(tensor.shape):
                    raise ValueError(f"set_weights: shape {tuple(source.shape)} does not match "
                                     f"{tuple(tensor.shape)}")
                tensor.copy_(source.to(device=tensor.device, dtype=tensor.dtype))

    @property
    def weights(self) -> list[torch.Tensor]:
        return self._tensors()

    @property
    def trainable_weights(self) -> list[torch.nn.Parameter]:
        return [p for p in self.module.parameters() if p.requires_grad]

    # -- everything else is the torch model's -------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_runner":
            raise AttributeError(name)
        if name in _NOT_HERE:
            raise ConfigError(f"a Keras callback called model.{name}(), which the Keras model "
                              f"facade of a hookline run does not provide; use {_NOT_HERE[name]}")
        try:
            return getattr(self._runner.model, name)
        except AttributeError:
            raise AttributeError(
                f"the Keras model facade of a hookline run has no attribute {name!r}, and neither "
                f"has {type(self._runner.model).__name__} (the torch model, self.model.module); "
                "it provides stop_training, optimizer.learning_rate, get_weights(), "
                "set_weights(), built, name, metrics") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("stop_training",) or name in type(self).__dict__:
            object.__setattr__(self, name, value)
        elif name in ("history",) or not hasattr(self._runner.model, name):
            object.__setattr__(self, name, value)  # callback bookkeeping lives on the facade
        else:
            setattr(self._runner.model, name, value)

    def __repr__(self) -> str:
        return f"<KerasModel over {type(self.module).__name__}>"
