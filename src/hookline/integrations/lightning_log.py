"""What a ``LightningModule``'s ``self.log`` records in a hookline run: one :class:`LoggedValue`
per name and phase, reduced over the epoch as Lightning reduces it.

Lightning's options carry over: ``reduce_fx`` is ``"mean"`` (weighted by the
batch size), ``"sum"``, ``"max"`` or ``"min"`` (or ``torch.mean`` ...); a
value logged both ``on_step`` and ``on_epoch`` is reported as
``<name>_step`` and ``<name>_epoch``. Values stay device tensors: adding
one costs no host-device sync, and :func:`epoch_results` returns tensors
too (with ``sync``, reduced over the ranks of a multi-process run, which
every rank must then call). A torchmetrics ``Metric`` logged as the value
is ``compute()``-d at the epoch's end.

Example::

    >>> acc = LoggedValue("acc", on_step=False, on_epoch=True, reduce="mean")
    >>> acc.add(torch.tensor(1.0), 3)
    >>> acc.add(torch.tensor(0.0), 1)                 # weighted by the batch sizes 3 and 1
    >>> [(value.epoch_name, float(result)) for value, result in epoch_results([acc])]
    [('acc', 0.75)]
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.engine import distributed

__all__ = ["REDUCTIONS", "LoggedValue", "ModuleLog", "as_logged", "epoch_results", "is_metric",
           "reduction"]

REDUCTIONS = ("mean", "sum", "max", "min")
_FUNCTIONS = ((torch.mean, "mean"), (torch.sum, "sum"), (sum, "sum"), (torch.max, "max"),
              (max, "max"), (torch.min, "min"), (min, "min"))


def reduction(reduce_fx: Any) -> str:
    """Lightning's ``reduce_fx`` as one of :data:`REDUCTIONS`; a :class:`ConfigError` otherwise.

    Example::

        >>> reduction("avg"), reduction(torch.max)
        ('mean', 'max')
    """
    if isinstance(reduce_fx, str):
        name = "mean" if reduce_fx.lower() == "avg" else reduce_fx.lower()
        if name in REDUCTIONS:
            return name
    else:
        for function, name in _FUNCTIONS:
            if reduce_fx is function:
                return name
    raise ConfigError(f"self.log(..., reduce_fx={reduce_fx!r}) is not supported: use 'mean' (the "
                      "default), 'sum', 'max' or 'min' (or torch.mean, torch.sum, torch.max, "
                      "torch.min)")


def is_metric(value: Any) -> bool:
    """A torchmetrics ``Metric`` (by its methods: torchmetrics is not imported here)."""
    return isinstance(value, torch.nn.Module) and all(
        callable(getattr(value, name, None)) for name in ("update", "compute", "reset"))


def as_logged(name: str, value: Any) -> Any:
    """``value`` as it is recorded: a detached floating 0-dim tensor, or a Metric as it is."""
    if is_metric(value):
        return value
    if isinstance(value, numbers.Number):
        return torch.tensor(float(value))  # type: ignore[arg-type]
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ConfigError(f"self.log({name!r}, ...) needs one number, got a tensor of shape "
                              f"{tuple(value.shape)}: log its mean, or one value per name")
        value = value.detach().reshape(())
        if value.dtype not in (torch.float32, torch.float64):
            value = value.to(torch.get_default_dtype())
        return value
    if isinstance(value, Mapping):
        raise ConfigError(f"self.log({name!r}, ...) got a dict: log each entry under its own "
                          "name, e.g. with self.log_dict(...)")
    raise ConfigError(f"self.log({name!r}, ...) takes a number, a one-element tensor or a "
                      f"torchmetrics Metric, got {type(value).__name__}")


class LoggedValue:
    """One name logged in one phase: its options, and what the epoch has accumulated."""

    __slots__ = ("metric", "name", "on_epoch", "on_step", "reduce", "sync", "total", "weight")

    def __init__(self, name: str, *, on_step: bool, on_epoch: bool, reduce: str,
                 sync: bool = False) -> None:
        self.name = name
        self.on_step, self.on_epoch, self.reduce, self.sync = on_step, on_epoch, reduce, sync
        self.total: torch.Tensor | None = None
        self.weight = 0
        self.metric: Any = None

    @property
    def options(self) -> tuple[bool, bool, str, bool]:
        return (self.on_step, self.on_epoch, self.reduce, self.sync)

    @property
    def step_name(self) -> str:
        """The name of its per-step values (``<name>_step`` when it is logged per epoch too)."""
        return f"{self.name}_step" if self.on_step and self.on_epoch else self.name

    @property
    def epoch_name(self) -> str:
        """The name of its epoch value (``<name>_epoch`` when it is logged per step too)."""
        return f"{self.name}_epoch" if self.on_step and self.on_epoch else self.name

    def reset(self) -> None:
        """Start a new epoch (a logged Metric is reset too)."""
        self.total, self.weight = None, 0
        if self.metric is not None:
            self.metric.reset()
        self.metric = None

    def add(self, value: Any, size: int = 1) -> None:
        """Accumulate one logged value (``size``: its batch size, for the mean)."""
        if is_metric(value):
            self.metric = value
            return
        total = self.total
        if total is not None and value.device != total.device:
            value = value.to(total.device)
        if self.reduce == "mean":
            value = value * size
        if total is None:
            self.total = value
        elif self.reduce in ("mean", "sum"):
            self.total = total + value
        else:
            self.total = (torch.maximum if self.reduce == "max" else torch.minimum)(total, value)
        self.weight += size if self.reduce == "mean" else 1

    def result(self) -> torch.Tensor | None:
        """This process's epoch value (a device tensor), or None when nothing was logged."""
        if self.metric is not None:
            return torch.as_tensor(self.metric.compute())
        if self.total is None:
            return None
        return self.total / self.weight if self.reduce == "mean" else self.total


def epoch_results(values: Sequence[LoggedValue], *, sync: bool = False
                  ) -> list[tuple[LoggedValue, torch.Tensor]]:
    """The epoch value of each of ``values`` that has one.

    Values whose ``sync`` is set, or all of them with ``sync=True``, are
    reduced over the ranks of a multi-process run (a weighted mean stays
    weighted by every rank's batch sizes): then every rank must call this at
    the same point, as the names each rank logged are gathered first.
    """
    local = [v for v in values if not (sync or v.sync) or v.metric is not None]
    results = [(v, r) for v in local if (r := v.result()) is not None]
    if distributed.get_world_size() <= 1:
        return results + [(v, r) for v in values if v not in local
                          and (r := v.result()) is not None]
    shared = {(v.epoch_name, v.reduce): v for v in values if v not in local and v.total is not None}
    everyone = distributed.all_gather_object(sorted(shared))
    keys = sorted({key for rank_keys in everyone for key in rank_keys})
    device = distributed.collective_device()
    ops = {"mean": torch.distributed.ReduceOp.SUM, "sum": torch.distributed.ReduceOp.SUM,
           "max": torch.distributed.ReduceOp.MAX, "min": torch.distributed.ReduceOp.MIN}
    for reduce, op in ops.items():
        group = [key for key in keys if key[1] == reduce]
        if not group:
            continue
        empty = {"max": float("-inf"), "min": float("inf")}.get(reduce, 0.0)
        parts: list[torch.Tensor] = []
        for key in group:
            value = shared.get(key)
            total = value.total if value is not None and value.total is not None else \
                torch.tensor(empty)
            parts.append(total.to(device=device, dtype=torch.float64).reshape(()))
            if reduce == "mean":
                parts.append(torch.tensor(float(value.weight if value else 0), dtype=torch.float64,
                                          device=device))
        packed = torch.stack(parts)
        torch.distributed.all_reduce(packed, op=op)
        step = 2 if reduce == "mean" else 1
        for i, key in enumerate(group):
            value = shared.get(key)
            if value is None:  # only other ranks logged it: reported the same on every rank
                value = LoggedValue(key[0], on_step=False, on_epoch=True, reduce=reduce)
            reduced = packed[i * step] / packed[i * step + 1] if step == 2 else packed[i]
            results.append((value, reduced))
    return results


class ModuleLog:
    """What ``module.log`` is while a run holds the module: Lightning's signature, passed on to
    ``hook.record`` (the run's ``LightningModuleHook``). A copy of the module
    (``copy.deepcopy``) logs into the same run."""

    def __init__(self, hook: Any) -> None:
        self.hook = hook

    def __call__(self, name: str, value: Any, prog_bar: bool = False, logger: bool | None = None,
                 on_step: bool | None = None, on_epoch: bool | None = None,
                 reduce_fx: Any = "mean", enable_graph: bool = False, sync_dist: bool = False,
                 sync_dist_group: Any = None, add_dataloader_idx: bool = True,
                 batch_size: int | None = None, metric_attribute: str | None = None,
                 rank_zero_only: bool = False) -> None:
        self.hook.record(name, value, prog_bar=prog_bar, on_step=on_step, on_epoch=on_epoch,
                         reduce_fx=reduce_fx, sync_dist=sync_dist, batch_size=batch_size,
                         logger=logger)

    def __deepcopy__(self, memo: dict[int, Any]) -> ModuleLog:
        return self

    def __reduce__(self) -> Any:
        raise TypeError("this LightningModule is held by a running hookline Runner (its log is "
                        "bound to the run): pickle it after the run, or save its state_dict()")
