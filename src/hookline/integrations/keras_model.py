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
  ``history`` (the run's ``History``, assignable); any other attribute is the
  torch model's; ``optimizer.learning_rate`` and ``optimizer.iterations``
  have the Keras variable's ``numpy()`` (and ``assign`` for the rate).

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
from hookline.engine.data import loader_length

from .keras_optimizer import RATIO_KEY, Iterations, KerasOptimizer, LearningRate, MultiOptimizer, lr_ratios

__all__ = ["RATIO_KEY", "Iterations", "KerasModel", "KerasOptimizer", "LearningRate", "eval_params",
           "fit_params", "lr_ratios", "metric_direction"]


def fit_params(runner: Any) -> dict[str, Any]:
    """Keras's ``callback.params`` in ``fit`` for this run: ``epochs`` and the batches per epoch
    (None for a loader without a length, as Keras gives); an iteration-based run is one epoch
    of ``max_iters``."""
    if runner.by_epoch:
        loader = runner.train_dataloader
        steps = loader_length(loader) if loader is not None else None
        return {"verbose": "auto", "epochs": runner.max_epochs, "steps": steps}
    return {"verbose": "auto", "epochs": 1, "steps": runner.max_iters}


def eval_params(loader: Any) -> dict[str, Any]:
    """Keras's ``callback.params`` in ``evaluate``: one epoch of the pass's batches (what a
    standalone ``runner.val()`` / ``runner.test()`` gives its callbacks)."""
    steps = loader_length(loader) if loader is not None else None
    return {"verbose": "auto", "epochs": 1, "steps": steps}

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


class _Direction:
    """What a ``mode="auto"`` monitor reads of a compiled metric: its name and direction."""

    def __init__(self, name: str, direction: str) -> None:
        self.name, self._direction = name, direction


#: names Keras's ``compile`` resolves itself (``compile_utils.get_metric``), not through
#: ``keras.metrics.get``: an accuracy or a crossentropy of the loss's kind
_COMPILE_NAMES = {"acc": "up", "accuracy": "up", "ce": "down", "crossentropy": "down"}


def _spec_names(name: str, spec: Any) -> list[str]:
    """The names a metric goes by: its spec (a registry name, a function's or a metric object's
    name) first, then its key in ``metrics=``."""
    names = [spec] if isinstance(spec, str) else []
    for attr in ("__name__", "name"):
        value = getattr(spec, attr, None)
        if isinstance(value, str):
            names.append(value)
    names.append(name)
    return names


def metric_direction(keras: Any, name: str, spec: Any) -> str | None:
    """``"up"`` or ``"down"`` for a metric of the run (``metrics={name: spec}``), as Keras's
    ``mode="auto"`` monitors learn it; None when unknown. A torchmetrics metric says it
    (``higher_is_better``); a name is Keras's (``"acc"``, ``"accuracy"``, ``"ce"`` and
    ``"crossentropy"`` as ``compile`` reads them, others through ``keras.metrics.get``).

    Example::

        >>> def accuracy(preds, targets): ...
        >>> metric_direction(None, "acc", accuracy), metric_direction(None, "top", accuracy)
        ('up', 'up')
    """
    better = getattr(spec, "higher_is_better", None)
    if isinstance(better, bool):
        return "up" if better else "down"
    for candidate in _spec_names(name, spec):
        if candidate.lower() in _COMPILE_NAMES:
            return _COMPILE_NAMES[candidate.lower()]
        try:
            direction = getattr(keras.metrics.get(candidate), "_direction", None)
        except (ValueError, TypeError, AttributeError):
            continue
        if direction in ("up", "down"):
            return str(direction)
    return None


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
        object.__setattr__(self, "_history", None)
        object.__setattr__(self, "_before_history_read", None)

    @property
    def history(self) -> Any:
        """Keras's ``model.history``: the run's ``History`` (the automatic one records its
        epochs when this is read, so an unread History costs no host-device sync)."""
        before = self._before_history_read
        if before is not None:
            before()
        return self._history

    @history.setter
    def history(self, value: Any) -> None:
        object.__setattr__(self, "_history", value)

    def on_history_read(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` each time ``history`` is read (the automatic History's catch-up)."""
        object.__setattr__(self, "_before_history_read", callback)

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
    def optimizer(self) -> KerasOptimizer | MultiOptimizer | None:
        found = _optimizers(self._runner.optim_wrapper)
        if not found:
            return None
        runner = self._runner

        def steps_done() -> int:
            return int(getattr(runner, "iter", 0))

        if len(found) == 1:
            return KerasOptimizer(found[0][1], steps_done=steps_done)
        return MultiOptimizer([KerasOptimizer(opt, name, steps_done) for name, opt in found])

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
        for name, spec in (getattr(self._runner, "metrics", {}) or {}).items():
            direction = metric_direction(keras, name, spec)
            if direction is not None:
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
        if name.startswith("__") or name in ("_runner", "_history", "_before_history_read"):
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
        elif not hasattr(self._runner.model, name):
            object.__setattr__(self, name, value)  # callback bookkeeping lives on the facade
        else:
            setattr(self._runner.model, name, value)

    def __repr__(self) -> str:
        return f"<KerasModel over {type(self.module).__name__}>"
