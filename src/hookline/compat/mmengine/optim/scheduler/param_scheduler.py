"""``mmengine.optim.scheduler.param_scheduler``: ``_ParamScheduler`` and MMEngine's
schedulers of any parameter (``param_name``), with ``begin`` / ``end`` windows.

A scheduler changes one value of every parameter group (``lr``, or
``momentum``: Adam's ``betas[0]``) on each ``step()`` whose count falls in
``[begin, end)``, chaining from the group's current value as MMEngine's (and
torch's) chainable schedulers do, so several may cover consecutive windows.
A project's own scheduler subclasses ``_ParamScheduler`` and defines
``_get_value()`` (mmdet's ``QuadraticWarmupParamScheduler``); its ``lr`` form
is ``class QuadraticWarmupLR(LRSchedulerMixin, QuadraticWarmupParamScheduler)``
(:mod:`.lr_scheduler`).

Example::

    >>> import torch
    >>> from hookline.compat.mmengine.optim.scheduler.param_scheduler import (
    ...     INF, StepParamScheduler)
    >>> opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0, weight_decay=0.5)
    >>> decay = StepParamScheduler(opt, "weight_decay", step_size=2, gamma=0.5, end=INF)
    >>> values = []
    >>> for _ in range(5):
    ...     values.append(opt.param_groups[0]["weight_decay"]); decay.step()
    >>> values
    [0.5, 0.5, 0.25, 0.25, 0.125]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hookline.core import ConfigError

from ....unsupported import MMENGINE_SCHEDULERS, module_getattr, refusal
from ...logging import print_log
from ...registry import PARAM_SCHEDULERS

INF = int(1e9)


def _groups(optimizer: Any) -> list[dict[str, Any]]:
    groups = getattr(optimizer, "param_groups", None)
    if groups is None:
        raise ConfigError(f"a parameter scheduler needs an optimizer or an optimizer wrapper, "
                          f"got {optimizer!r}")
    return list(groups)


class _ParamScheduler:
    """MMEngine's base class: subclasses define ``_get_value()`` (the new values, chained from
    the groups' current ones; ``self.last_step`` counts steps inside the window)."""

    #: MMEngine steps its schedulers after every training iteration, also while gradients
    #: accumulate (``ParamSchedulerHook`` reads this; torch's step once per optimizer step)
    steps_every_iteration = True
    #: ``end`` left out is the end of the run (``max_epochs``, or ``max_iters`` when not
    #: ``by_epoch``), as MMEngine's Runner fills it in (:mod:`hookline.engine.schedule_length`)
    run_length_key = "end"

    def __init__(self, optimizer: Any, param_name: str, begin: int = 0, end: int = INF,
                 last_step: int = -1, by_epoch: bool = True, verbose: bool = False) -> None:
        if end <= begin:
            raise ConfigError(f"{type(self).__name__}: end must be larger than begin, got "
                              f"begin={begin}, end={end}")
        if isinstance(last_step, bool) or not isinstance(last_step, int) or last_step < -1:
            raise ConfigError(f"{type(self).__name__}: last_step must be an int >= -1")
        self.optimizer = optimizer
        self.param_name = param_name
        self.begin, self.end, self.by_epoch, self.verbose = begin, end, by_epoch, verbose
        for index, group in enumerate(_groups(optimizer)):
            if param_name not in group and not (param_name == "momentum" and "betas" in group):
                raise ConfigError(f"{type(self).__name__}: the optimizer "
                                  f"({type(optimizer).__name__}) has no {param_name!r} in "
                                  f"param_groups[{index}] to schedule"
                                  + (" (a momentum scheduler needs SGD's momentum or Adam's "
                                     "betas)" if param_name == "momentum" else ""))
            key = f"initial_{param_name}"
            if last_step == -1:
                group.setdefault(key, self._read(group))
            elif key not in group:
                raise ConfigError(f"{type(self).__name__}: param_groups[{index}] has no {key!r} "
                                  "to resume from")
        self.base_values: list[float] = [g[f"initial_{param_name}"] for g in _groups(optimizer)]
        self.last_step = last_step
        self._global_step = -1
        self._last_value: list[float] = []
        self.step()

    def _read(self, group: dict[str, Any]) -> float:
        if self.param_name == "momentum" and "momentum" not in group and "betas" in group:
            return float(group["betas"][0])
        return float(group[self.param_name])

    def _write(self, group: dict[str, Any], value: float) -> None:
        if self.param_name == "momentum" and "momentum" not in group and "betas" in group:
            group["betas"] = (value, *tuple(group["betas"])[1:])
        else:
            group[self.param_name] = value

    def _current(self) -> list[float]:
        return [self._read(g) for g in _groups(self.optimizer)]

    def _get_value(self) -> list[float]:
        raise NotImplementedError(f"{type(self).__name__} must define _get_value")

    def step(self) -> None:
        """Count one step; inside ``[begin, end)`` set the new values."""
        self._global_step += 1
        if self.begin <= self._global_step < self.end:
            self.last_step += 1
            for index, (group, value) in enumerate(zip(_groups(self.optimizer),
                                                       self._get_value())):
                self._write(group, value)
                if self.verbose:
                    print_log(f"Adjusting {self.param_name} of group {index} to {value:.4e}.",
                              logger="current")
        self._last_value = self._current()

    def get_last_value(self) -> list[float]:
        return list(self._last_value)

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (plain values: checkpoints load with weights_only)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    @classmethod
    def build_iter_from_epoch(cls, *args: Any, begin: int = 0, end: int = INF,
                              by_epoch: bool = True, epoch_length: int | None = None,
                              **kwargs: Any) -> _ParamScheduler:
        """The same schedule counted in iterations (``epoch_length`` per epoch)."""
        if not by_epoch:
            raise ConfigError("build_iter_from_epoch needs by_epoch=True")
        if not isinstance(epoch_length, int) or epoch_length <= 0:
            raise ConfigError(f"epoch_length must be a positive int, got {epoch_length!r}")
        for key in cls._epoch_arguments:
            if kwargs.get(key) is not None:
                value = kwargs[key]
                kwargs[key] = ([v * epoch_length for v in value] if isinstance(value, Sequence)
                               else value * epoch_length)
        kwargs.update(begin=begin * epoch_length, by_epoch=False,
                      end=end * epoch_length if end != INF else INF)
        factory: Any = cls
        built: _ParamScheduler = factory(*args, **kwargs)
        return built

    _epoch_arguments: tuple[str, ...] = ()


class StepParamScheduler(_ParamScheduler):
    """Multiply by ``gamma`` every ``step_size`` steps."""

    _epoch_arguments = ("step_size",)

    def __init__(self, optimizer: Any, param_name: str, step_size: int, gamma: float = 0.1,
                 begin: int = 0, end: int = INF, last_step: int = -1, by_epoch: bool = True,
                 verbose: bool = False) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, param_name, begin, end, last_step, by_epoch, verbose)

    def _get_value(self) -> list[float]:
        current = self._current()
        if self.last_step == 0 or self.last_step % self.step_size != 0:
            return current
        return [v * self.gamma for v in current]


class MultiStepParamScheduler(_ParamScheduler):
    """Multiply by ``gamma`` at each milestone."""

    _epoch_arguments = ("milestones",)

    def __init__(self, optimizer: Any, param_name: str, milestones: Sequence[int],
                 gamma: float = 0.1, begin: int = 0, end: int = INF, last_step: int = -1,
                 by_epoch: bool = True, verbose: bool = False) -> None:
        self.milestones: dict[int, int] = {}
        for milestone in milestones:
            self.milestones[int(milestone)] = self.milestones.get(int(milestone), 0) + 1
        self.gamma = gamma
        super().__init__(optimizer, param_name, begin, end, last_step, by_epoch, verbose)

    def _get_value(self) -> list[float]:
        current = self._current()
        count = self.milestones.get(self.last_step, 0)
        return [v * self.gamma ** count for v in current]


class ConstantParamScheduler(_ParamScheduler):
    """Multiply by ``factor`` until the window ends, then restore."""

    def __init__(self, optimizer: Any, param_name: str, factor: float = 1.0 / 3, begin: int = 0,
                 end: int = INF, last_step: int = -1, by_epoch: bool = True,
                 verbose: bool = False) -> None:
        if not 0 < factor <= 1:
            raise ConfigError(f"ConstantParamScheduler factor must be in (0, 1], got {factor!r}")
        self.factor = factor
        self.total_iters = end - begin - 1
        super().__init__(optimizer, param_name, begin, end, last_step, by_epoch, verbose)

    def _get_value(self) -> list[float]:
        current = self._current()
        if self.last_step == 0:
            return [v * self.factor for v in current]
        if self.last_step != self.total_iters:
            return current
        return [v / self.factor for v in current]


class ExponentialParamScheduler(_ParamScheduler):
    """Multiply by ``gamma`` every step."""

    def __init__(self, optimizer: Any, param_name: str, gamma: float, begin: int = 0,
                 end: int = INF, last_step: int = -1, by_epoch: bool = True,
                 verbose: bool = False) -> None:
        self.gamma = gamma
        super().__init__(optimizer, param_name, begin, end, last_step, by_epoch, verbose)

    def _get_value(self) -> list[float]:
        current = self._current()
        return current if self.last_step == 0 else [v * self.gamma for v in current]


class CosineAnnealingParamScheduler(_ParamScheduler):
    """Cosine from the base value to ``eta_min`` (or ``base * eta_min_ratio``) over ``T_max``."""

    _epoch_arguments = ("T_max",)

    def __init__(self, optimizer: Any, param_name: str, T_max: int | None = None,
                 eta_min: float | None = None, begin: int = 0, end: int = INF,
                 last_step: int = -1, by_epoch: bool = True, verbose: bool = False,
                 eta_min_ratio: float | None = None) -> None:
        if eta_min is not None and eta_min_ratio is not None:
            raise ConfigError("CosineAnnealingParamScheduler: give eta_min or eta_min_ratio")
        if T_max is None and end == INF:
            raise ConfigError("CosineAnnealingParamScheduler needs T_max or end")
        self.T_max = T_max if T_max is not None else end - begin
        self.eta_min = 0.0 if eta_min is None and eta_min_ratio is None else eta_min
        self.eta_min_ratio = eta_min_ratio
        super().__init__(optimizer, param_name, begin, end, last_step, by_epoch, verbose)

    def _floor(self, base: float) -> float:
        return base * self.eta_min_ratio if self.eta_min_ratio is not None else float(
            self.eta_min or 0.0)

    def _get_value(self) -> list[float]:
        current = self._current()
        if self.last_step == 0:
            return current
        t, period = self.last_step, self.T_max
        values = []
        for base, value in zip(self.base_values, current):
            floor = self._floor(base)
            if (t - 1 - period) % (2 * period) == 0:
                values.append(value + (base - floor) * (1 - math.cos(math.pi / period)) / 2)
            else:
                values.append((1 + math.cos(math.pi * t / period))
                              / (1 + math.cos(math.pi * (t - 1) / period)) * (value - floor) + floor)
        return values


class LinearParamScheduler(_ParamScheduler):
    """Linear from ``start_factor`` to ``end_factor`` of the value over the window."""

    def __init__(self, optimizer: Any, param_name: str, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, begin: int = 0, end: int = INF, last_step: int = -1,
                 by_epoch: bool = True, verbose: bool = False) -> None:
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ConfigError("LinearParamScheduler: start_factor must be in (0, 1] and "
                              "end_factor in [0, 1]")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = end - begin - 1
        super().__init__(optimizer, param_name, begin, end, last_step, by_epoch, verbose)

    def _get_value(self) -> list[float]:
        current = self._current()
        if self.last_step == 0:
            return [v * self.start_factor for v in current]
        if self.last_step > self.total_iters:
            return current
        change = self.end_factor - self.start_factor
        ratio = 1 + change / (self.total_iters * self.start_factor + (self.last_step - 1) * change)
        return [v * ratio for v in current]


class PolyParamScheduler(_ParamScheduler):
    """Polynomial decay to ``eta_min`` over the window."""

    def __init__(self, optimizer: Any, param_name: str, eta_min: float = 0.0, power: float = 1.0,
                 begin: int = 0, end: int = INF, last_step: int = -1, by_epoch: bool = True,
                 verbose: bool = False) -> None:
        self.eta_min, self.power = eta_min, power
        self.total_iters = end - begin - 1
        super().__init__(optimizer, param_name, begin, end, last_step, by_epoch, verbose)

    def _get_value(self) -> list[float]:
        current = self._current()
        if self.last_step == 0:
            return current
        keep = (1 - 1 / (self.total_iters - self.last_step + 1)) ** self.power
        return [(v - self.eta_min) * keep + self.eta_min for v in current]


_PARAM_SCHEDULERS = (ConstantParamScheduler, CosineAnnealingParamScheduler,
                     ExponentialParamScheduler, LinearParamScheduler, MultiStepParamScheduler,
                     StepParamScheduler, PolyParamScheduler)
PARAM_SCHEDULERS.add_builtins({cls.__name__: cls for cls in _PARAM_SCHEDULERS})
PARAM_SCHEDULERS.add_builtins({name: refusal(name, hint) for name, hint in MMENGINE_SCHEDULERS.items()})
__getattr__ = module_getattr(__name__, MMENGINE_SCHEDULERS)

__all__ = [
    "INF", "ConstantParamScheduler", "CosineAnnealingParamScheduler",
    "ExponentialParamScheduler", "LinearParamScheduler", "MultiStepParamScheduler",
    "PolyParamScheduler", "StepParamScheduler", "_ParamScheduler",
]
