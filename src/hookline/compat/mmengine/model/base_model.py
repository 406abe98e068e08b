"""``mmengine.model``: ``BaseModel``, ``BaseDataPreprocessor`` and ``BaseModule``.

A ``BaseModel`` runs under a hookline Runner as it does under MMEngine:
``train_step(data, optim_wrapper)`` (preprocess, ``forward(mode="loss")``,
``parse_losses``, ``optim_wrapper.update_params``) returns the log
variables, and ``val_step`` / ``test_step`` return what
``forward(mode="predict")`` returns (a list of data samples, which the
Runner's metrics receive).

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.model import BaseModel
    >>> class Regressor(BaseModel):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.linear = torch.nn.Linear(2, 1)
    ...     def forward(self, inputs, targets=None, mode="tensor"):
    ...         out = self.linear(inputs)
    ...         if mode == "loss":
    ...             return {"loss_mse": ((out.squeeze(1) - targets) ** 2).mean()}
    ...         return [{"pred": float(v)} for v in out.squeeze(1)] if mode == "predict" else out
    >>> model = Regressor()
    >>> loss, log_vars = model.parse_losses({"loss_mse": torch.tensor(2.0), "acc": torch.tensor(0.5)})
    >>> float(loss), sorted(log_vars)
    (2.0, ['acc', 'loss', 'loss_mse'])
    >>> with torch.no_grad():   # the Runner's validation loop runs without gradients
    ...     len(model.val_step({"inputs": torch.zeros(3, 2), "targets": torch.zeros(3)}))
    3
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.engine.data import move_to
from hookline.engine.step_sync import DDP_LOSS_FORWARD

from ..registry import MODELS


class BaseDataPreprocessor(torch.nn.Module):
    """Moves a batch to the model's device (``forward(data, training=False)``)."""

    _device_anchor: torch.Tensor

    def __init__(self, non_blocking: bool = False) -> None:
        super().__init__()
        self._non_blocking = non_blocking
        self.register_buffer("_device_anchor", torch.empty(0), persistent=False)

    @property
    def device(self) -> torch.device:
        return self._device_anchor.device

    def cast_data(self, data: Any) -> Any:
        """``data`` with every tensor on :attr:`device`."""
        return move_to(data, self.device)

    def forward(self, data: Any, training: bool = False) -> Any:
        return self.cast_data(data)


class BaseModule(torch.nn.Module):
    """``torch.nn.Module`` with MMEngine's ``init_cfg`` slot; ``init_weights()`` calls the
    children's ``init_weights`` (an ``init_cfg`` is a ConfigError: weight-init configs are
    not supported)."""

    def __init__(self, init_cfg: Any = None) -> None:
        super().__init__()
        self.init_cfg = init_cfg
        self.is_init = False

    def init_weights(self) -> None:
        if self.init_cfg is not None:
            raise ConfigError(f"{type(self).__name__}: init_cfg {self.init_cfg!r} is not "
                              "supported (hookline has no weight-initialiser registry); "
                              "initialise the weights in __init__")
        for child in self.children():
            init = getattr(child, "init_weights", None)
            if callable(init):
                init()
        self.is_init = True


class BaseModel(BaseModule):
    """MMEngine's model contract (see the module docstring)."""

    def __init__(self, data_preprocessor: torch.nn.Module | Mapping[str, Any] | None = None,
                 init_cfg: Any = None) -> None:
        super().__init__(init_cfg)
        if data_preprocessor is None:
            data_preprocessor = BaseDataPreprocessor()
        elif isinstance(data_preprocessor, Mapping):
            spec = dict(data_preprocessor)
            spec.setdefault("type", "BaseDataPreprocessor")
            data_preprocessor = MODELS.build(spec)
        if not isinstance(data_preprocessor, torch.nn.Module):
            raise ConfigError(f"data_preprocessor must be a module or a config dict, got "
                              f"{data_preprocessor!r}")
        self.data_preprocessor = data_preprocessor

    def forward(self, inputs: Any, data_samples: Any = None, mode: str = "tensor") -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward(inputs, "
                                  "data_samples=None, mode='tensor'|'loss'|'predict')")

    def _run_forward(self, data: Any, mode: str) -> Any:
        if isinstance(data, Mapping):
            return self(**data, mode=mode)
        if isinstance(data, (list, tuple)):
            return self(*data, mode=mode)
        raise TypeError(f"the data preprocessor must give a dict, tuple or list, got "
                        f"{type(data).__name__}")

    def parse_losses(self, losses: Mapping[str, Any]) -> tuple[torch.Tensor, dict[str, Any]]:
        """``loss`` = the sum of every entry whose name contains ``loss`` (lists are summed,
        tensors averaged); ``log_vars`` holds it first, then every entry."""
        log_vars: list[tuple[str, Any]] = []
        for name, value in losses.items():
            if isinstance(value, torch.Tensor):
                log_vars.append((name, value.mean()))
            elif isinstance(value, Sequence) and all(isinstance(v, torch.Tensor) for v in value):
                log_vars.append((name, sum(v.mean() for v in value)))
            else:
                raise TypeError(f"{name} is not a tensor or a list of tensors: {value!r}")
        loss = sum(value for name, value in log_vars if "loss" in name)
        if not isinstance(loss, torch.Tensor):
            raise ValueError(f"no entry of {sorted(losses)} names a loss")
        ordered: dict[str, Any] = OrderedDict([("loss", loss)])
        ordered.update((name, value.detach()) for name, value in log_vars if name != "loss")
        return loss, ordered

    def train_step(self, data: Any, optim_wrapper: Any) -> dict[str, Any]:
        with optim_wrapper.optim_context(self):
            data = self.data_preprocessor(data, True)
            losses = self._run_forward(data, mode="loss")
        loss, log_vars = self.parse_losses(losses)
        optim_wrapper.update_params(loss)
        log_vars["loss"] = loss.detach()
        return log_vars

    # on several processes a Runner runs this loss forward through DDP (MMEngine's
    # MMDistributedDataParallel.train_step); an override of train_step is left as written
    setattr(train_step, DDP_LOSS_FORWARD, True)

    def val_step(self, data: Any) -> Any:
        data = self.data_preprocessor(data, False)
        return self._run_forward(data, mode="predict")

    def test_step(self, data: Any) -> Any:
        data = self.data_preprocessor(data, False)
        return self._run_forward(data, mode="predict")

    def validation_step(self, data: Any) -> Any:
        """hookline's name for :meth:`val_step` (what the Runner's validation calls)."""
        return self.val_step(data)


MODELS.add_builtins({"BaseDataPreprocessor": BaseDataPreprocessor})

__all__ = ["BaseDataPreprocessor", "BaseModel", "BaseModule"]
