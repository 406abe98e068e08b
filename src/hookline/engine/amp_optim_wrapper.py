"""``AmpOptimWrapper``: :class:`OptimWrapper` with autocast and, for float16, a GradScaler.

Example::

    >>> import torch
    >>> from hookline.engine.amp_optim_wrapper import AmpOptimWrapper
    >>> model = torch.nn.Linear(2, 1)
    >>> wrapper = AmpOptimWrapper(optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    >>> wrapper.dtype, wrapper.loss_scaler      # on CPU: bfloat16, no scaler
    (torch.bfloat16, None)
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import torch

from hookline.core import ConfigError

from .optim_wrapper import OptimWrapper
from .registries import OPTIM_WRAPPERS

_SCALER_KEYS = ("init_scale", "growth_factor", "backoff_factor", "growth_interval")
_DTYPES = {"float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
           "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
           "float32": torch.float32, "float64": torch.float64}  # MMEngine's valid_dtypes too
#: the dtypes autocast runs in; float32 / float64 run the forward at full precision
_AUTOCAST = (torch.float16, torch.bfloat16)


def check_loss_scale(loss_scale: Any) -> None:
    """``"dynamic"``, a positive number (static scale) or a dict of GradScaler arguments."""
    if loss_scale == "dynamic":
        return
    if isinstance(loss_scale, Mapping):
        extra = sorted(set(loss_scale) - set(_SCALER_KEYS))
        if extra:
            raise ConfigError(f"loss_scale dict takes GradScaler arguments {list(_SCALER_KEYS)}, "
                              f"got unknown {extra}")
        return
    if isinstance(loss_scale, bool) or not isinstance(loss_scale, (int, float)) or loss_scale <= 0:
        raise ConfigError("loss_scale must be 'dynamic', a positive number (static scale) or a "
                          f"dict of GradScaler arguments {list(_SCALER_KEYS)}, got {loss_scale!r}")


def _device_type(optimizer: torch.optim.Optimizer) -> str:
    for group in optimizer.param_groups:
        for param in group["params"]:
            return str(param.device.type)
    return "cpu"


@OPTIM_WRAPPERS.register()
class AmpOptimWrapper(OptimWrapper):
    """Mixed precision: forward passes under ``torch.autocast``; float16 adds a GradScaler.

    Args:
        loss_scale: ``"dynamic"`` (GradScaler's growing/backing-off scale), a
            number (a static scale: steps with inf/NaN gradients are skipped
            and the scale stays), or a dict of GradScaler arguments.
        dtype: ``"float16"`` or ``"bfloat16"`` (or a torch dtype); default
            float16 on CUDA, bfloat16 elsewhere. Only float16 uses a
            scaler (:attr:`loss_scaler`; saved in checkpoints). ``"float32"`` and
            ``"float64"`` (MMEngine accepts them) turn autocast off: the forward
            runs at the parameters' precision. :attr:`cast_dtype` is the dtype
            as given (None: the default), MMEngine's attribute.
        device_type: where autocast runs; default: the device of the
            optimizer's parameters.
        use_fsdp: MMEngine's switch to FSDP's ``ShardedGradScaler``: False is
            accepted; True is a ``ConfigError`` (hookline trains with DDP, not FSDP).
        **kwargs: :class:`OptimWrapper`'s ``optimizer``, ``accumulative_counts``,
            ``clip_grad``.
    """

    def __init__(self, loss_scale: str | float | Mapping[str, Any] = "dynamic",
                 dtype: str | torch.dtype | None = None, device_type: str | None = None,
                 use_fsdp: bool = False, **kwargs: Any) -> None:
        if use_fsdp is not False:
            raise ConfigError(f"AmpOptimWrapper use_fsdp={use_fsdp!r}: FSDP's ShardedGradScaler "
                              "is not supported by hookline, which trains on several GPUs with "
                              "DistributedDataParallel; leave use_fsdp out (or False)")
        super().__init__(**kwargs)
        check_loss_scale(loss_scale)
        self.loss_scale = loss_scale
        self.device_type = device_type or _device_type(self.optimizer)
        if isinstance(dtype, str):
            if dtype not in _DTYPES:
                raise ConfigError(f"AmpOptimWrapper dtype must be one of {sorted(_DTYPES)}, "
                                  f"got {dtype!r}")
            dtype = _DTYPES[dtype]
        if dtype is not None and dtype not in _DTYPES.values():
            raise ConfigError(f"AmpOptimWrapper dtype must be one of {sorted(_DTYPES)} or "
                              f"the torch dtype, got {dtype!r}")
        #: the dtype as given (None: the device's default), MMEngine's attribute
        self.cast_dtype: torch.dtype | None = dtype
        self.dtype = dtype or (torch.float16 if self.device_type == "cuda" else torch.bfloat16)
        self._static_scale: float | None = None
        self.loss_scaler: torch.amp.GradScaler | None = None
        if self.dtype == torch.float16:  # float16 gradients underflow on any device
            self.loss_scaler = self._make_scaler()

    def _make_scaler(self) -> torch.amp.GradScaler:
        device = self.device_type
        if self.loss_scale == "dynamic":
            return torch.amp.GradScaler(device)
        if isinstance(self.loss_scale, Mapping):
            return torch.amp.GradScaler(device, **dict(self.loss_scale))
        # static: the scale is put back after every update, so it never grows or backs off
        self._static_scale = float(self.loss_scale)
        return torch.amp.GradScaler(device, init_scale=self._static_scale)

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.dtype not in _AUTOCAST:  # float32 / float64: full precision (as torch's
            return torch.autocast(device_type=self.device_type, enabled=False)  # fallback)
        return torch.autocast(device_type=self.device_type, dtype=self.dtype)

    def backward(self, loss: torch.Tensor, **kwargs: Any) -> None:
        if self.loss_scaler is not None:
            loss = self.loss_scaler.scale(loss)
        super().backward(loss, **kwargs)

    def step(self, **kwargs: Any) -> None:
        scaler = self.loss_scaler
        if scaler is None:
            super().step(**kwargs)
            return
        if self.clip_grad is not None or self.before_step:  # both see the true gradients
            scaler.unscale_(self.optimizer)
        self.before_step.emit()
        if self.clip_grad is not None:
            self._clip()
        scaler.step(self.optimizer, **kwargs)
        scaler.update(self._static_scale)

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state dict plus ``loss_scaler`` (MMEngine's layout)."""
        state = dict(self.optimizer.state_dict())
        if self.loss_scaler is not None:
            state["loss_scaler"] = self.loss_scaler.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        scaler_state = state.pop("loss_scaler", None)
        if scaler_state is not None and self.loss_scaler is not None:
            self.loss_scaler.load_state_dict(scaler_state)
        self.optimizer.load_state_dict(state)
