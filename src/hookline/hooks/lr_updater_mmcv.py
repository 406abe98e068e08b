"""mmcv 1.x's own learning-rate algorithm, for ``LrUpdaterHook`` subclasses that define a policy.

mmcv's ``LrUpdaterHook`` has no policy table: a policy is a subclass that
implements ``get_lr(runner, base_lr)`` (mmdet's ``YOLOXLrUpdaterHook``, a
project's ``HalvingLrUpdaterHook``), and the base class drives it:

* ``before_run``: ``base_lr`` is each param group's ``initial_lr`` (set to its
  ``lr`` where missing): a list, or a dict of lists with several optimizers;
* ``before_train_epoch``: with ``warmup_by_epoch``, ``warmup_iters`` becomes
  ``warmup_epochs * len(runner.data_loader)`` (once); with ``by_epoch``,
  ``regular_lr = get_regular_lr(runner)`` (``get_lr`` per param group) is set;
* ``before_train_iter``: by iteration, ``regular_lr`` is recomputed and set,
  or ``get_warmup_lr(runner.iter)`` while ``runner.iter < warmup_iters``; by
  epoch, ``get_warmup_lr(runner.iter)`` while ``runner.iter < warmup_iters``
  and ``regular_lr`` again at ``runner.iter == warmup_iters``.

:class:`~hookline.hooks.LrUpdaterHook` runs exactly this when its class
overrides ``get_lr``, ``get_warmup_lr`` or ``get_regular_lr`` (a subclass of
a per-policy class such as ``CosineAnnealingLrUpdaterHook`` that overrides
only ``get_warmup_lr`` keeps that policy's mmcv ``get_lr``); otherwise it
runs its torch schedulers. Such a hook, like every mmcv hook, receives the
Runner's mmcv view as ``runner`` (``runner.data_loader``, ``runner.epoch`` ...;
``hookline.compat.mmcv`` installs it, the Runner itself without that import),
has mmcv's attributes (``base_lr``, ``regular_lr``, ``warmup_iters``,
``warmup_ratio``, ``warmup_epochs``, and its policy's arguments such as
``min_lr_ratio``), runs at mmcv's ``lr_config`` priority ``VERY_HIGH`` unless
its class sets another, and keeps ``base_lr`` in checkpoints.

Example::

    >>> from hookline.hooks import LrUpdaterHook
    >>> class Halving(LrUpdaterHook):
    ...     def get_lr(self, runner, base_lr):
    ...         return base_lr * 0.5 ** runner.epoch
    >>> hook = Halving(by_epoch=True)
    >>> hook.mmcv_driven, hook.priority, hook.triggered_stages()
    (True, 'VERY_HIGH', ['before_run', 'before_train', 'before_train_epoch', 'before_train_iter'])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from hookline.core import ConfigError
from hookline.engine.hook import Hook, StageMethod

from .updater_lengths import needs_run_length, warmup_iterations

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

__all__ = ["MmcvLrSchedule", "anneal"]

#: the methods whose override makes the hook run mmcv's algorithm
_DRIVERS = ("get_lr", "get_warmup_lr", "get_regular_lr")
#: the torch-scheduler stages (the base's) and mmcv's stages (this class's)
_TORCH_STAGES = ("after_train_iter", "after_train_epoch")
_MMCV_STAGES = ("before_train_epoch", "before_train_iter")

LrGroups = list[float] | dict[str, list[float]]
Optimizers = torch.optim.Optimizer | dict[str, torch.optim.Optimizer]


def anneal(strategy: str, start: float, end: float, pct: float) -> float:
    """mmcv's ``annealing_cos`` (``"cos"``) or ``annealing_linear`` from ``start`` to ``end``."""
    if strategy == "cos":
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
    return (end - start) * pct + start


def optimizers(runner: Any) -> Optimizers | None:
    """mmcv's ``runner.optimizer``: the optimizer, a dict of them (an ``OptimWrapperDict``
    run), or None."""
    if runner.optimizer is not None:
        return runner.optimizer  # type: ignore[no-any-return]
    wrapper = runner.optim_wrapper
    if wrapper is not None and hasattr(wrapper, "items"):
        return {name: w.optimizer for name, w in wrapper.items()}
    return None


class MmcvLrSchedule(Hook):
    """mmcv's ``LrUpdaterHook`` methods, mixed into :class:`~hookline.hooks.LrUpdaterHook`
    (see the module docstring)."""

    #: set per class: whether it overrides ``get_lr`` / ``get_warmup_lr`` / ``get_regular_lr``
    mmcv_driven: ClassVar[bool] = False
    # set by LrUpdaterHook's __init__
    policy: str
    args: dict[str, Any]
    by_epoch: bool
    warmup: str | None
    warmup_iters: Any
    warmup_ratio: float
    warmup_by_epoch: bool

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.mmcv_driven = any(getattr(cls, name) is not getattr(MmcvLrSchedule, name)
                              for name in _DRIVERS)

    def _mmcv_setup(self) -> None:
        """mmcv's attributes, for a class that runs mmcv's algorithm (LrUpdaterHook's init)."""
        if not self.mmcv_driven:
            return
        if self.policy == "onecycle" and type(self).get_lr is MmcvLrSchedule.get_lr:
            raise ConfigError(f"{type(self).__name__}: policy 'onecycle' has no mmcv get_lr "
                              "here; override get_lr too, or drop the get_warmup_lr override")
        for name, value in self.args.items():  # mmcv's per-policy classes keep them as attributes
            setattr(self, name, value)
        self.base_lr: LrGroups = []
        self.regular_lr: LrGroups = []
        self.warmup_epochs: int | None = None
        if self.warmup_by_epoch:
            self.warmup_epochs, self.warmup_iters = self.warmup_iters, None
        if not any("priority" in vars(c) for c in type(self).__mro__[:_depth(type(self))]):
            self.priority = "VERY_HIGH"  # mmcv registers lr_config's hook at VERY_HIGH

    # -- mmcv's API ---------------------------------------------------------------------------
    def get_lr(self, runner: Any, base_lr: float) -> float:
        """The lr of a param group whose initial lr is ``base_lr``: the policy's, by mmcv's
        formula (``fixed``, ``step``, ``exp``, ``poly``, ``cosine``, ``linear``)."""
        a, policy = self.args, self.policy
        progress = runner.epoch if self.by_epoch else runner.iter
        if policy == "fixed":
            return base_lr
        if policy in ("step", "exp"):
            step: Any = a.get("step")
            if policy == "exp":
                exp = progress
            elif isinstance(step, int):
                exp = progress // step
            else:
                exp = next((i for i, s in enumerate(step) if progress < s), len(step))
            return float(base_lr * a["gamma"] ** exp)
        total = runner.max_epochs if self.by_epoch else runner.max_iters
        if not total:
            raise needs_run_length(runner, type(self).__name__, policy)
        if policy == "poly":
            coeff = (1 - progress / total) ** a["power"]
            return float((base_lr - a["min_lr"]) * coeff + a["min_lr"])
        target = base_lr * a["min_lr_ratio"] if a.get("min_lr_ratio") is not None \
            else (a.get("min_lr") or 0.0)
        return anneal("cos" if policy == "cosine" else "linear", base_lr, target, progress / total)

    def get_regular_lr(self, runner: Any) -> LrGroups:
        """``get_lr(runner, base)`` for each param group (per optimizer in a dict)."""
        if isinstance(self.base_lr, dict):
            return {k: [self.get_lr(runner, base) for base in bases]
                    for k, bases in self.base_lr.items()}
        return [self.get_lr(runner, base) for base in self.base_lr]

    def get_warmup_lr(self, cur_iters: int) -> LrGroups:
        """``regular_lr`` scaled by mmcv's warm-up at iteration ``cur_iters``."""
        def scaled(regular: list[float]) -> list[float]:
            if self.warmup == "constant":
                return [lr * self.warmup_ratio for lr in regular]
            if self.warmup == "linear":
                k = (1 - cur_iters / self.warmup_iters) * (1 - self.warmup_ratio)
                return [lr * (1 - k) for lr in regular]
            k = self.warmup_ratio ** (1 - cur_iters / self.warmup_iters)
            return [lr * k for lr in regular]

        if isinstance(self.regular_lr, dict):
            return {key: scaled(lrs) for key, lrs in self.regular_lr.items()}
        return scaled(self.regular_lr)

    def _set_lr(self, runner: Any, lr_groups: LrGroups) -> None:
        found = optimizers(runner)
        if isinstance(found, dict):
            assert isinstance(lr_groups, dict)
            for key, optimizer in found.items():
                for group, lr in zip(optimizer.param_groups, lr_groups[key]):
                    group["lr"] = lr
        elif found is not None:
            assert isinstance(lr_groups, list)
            for group, value in zip(found.param_groups, lr_groups):
                group["lr"] = value

    # -- mmcv's stages ------------------------------------------------------------------------
    def _mmcv_before_run(self, runner: Any) -> None:
        found = optimizers(runner)

        def initial(optimizer: torch.optim.Optimizer) -> list[float]:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
            return [group["initial_lr"] for group in optimizer.param_groups]

        if isinstance(found, dict):
            self.base_lr = {key: initial(optimizer) for key, optimizer in found.items()}
        elif found is not None:
            self.base_lr = initial(found)

    def _mmcv_before_train(self, runner: Runner) -> None:
        if optimizers(runner) is None:
            raise ConfigError(f"{type(self).__name__} needs an optimizer: pass optimizer= to "
                              "the Runner")
        if runner.param_schedulers:
            runner.logger.warning(f"{type(self).__name__} sets the learning rate itself: the "
                                  "Runner's param_scheduler is overridden every step; use one "
                                  "or the other")
        self._warmup_known(runner)

    def _warmup_known(self, runner: Any) -> None:
        """mmcv's ``warmup_by_epoch``: ``warmup_iters = warmup_epochs * len(data_loader)``, once."""
        if self.warmup_iters is None:
            self.warmup_iters = warmup_iterations(runner, self.warmup_epochs or 0,
                                                  warmup_by_epoch=True, kind=type(self).__name__)

    def before_train_epoch(self, runner: Any) -> None:
        """mmcv's: the warm-up length (``warmup_by_epoch``), then the epoch's lr (``by_epoch``)."""
        if not self.mmcv_driven:
            return
        self._warmup_known(runner)  # where mmcv computes it (before_train did already)
        if self.by_epoch:
            self.regular_lr = self.get_regular_lr(runner)
            self._set_lr(runner, self.regular_lr)

    def before_train_iter(self, runner: Any, batch_idx: int = 0,
                          data_batch: Any = None) -> None:
        """mmcv's: the iteration's lr (by iteration), or the warm-up's."""
        if not self.mmcv_driven:
            return
        cur_iter = runner.iter
        if not self.by_epoch:
            self.regular_lr = self.get_regular_lr(runner)
            if self.warmup is None or cur_iter >= self.warmup_iters:
                self._set_lr(runner, self.regular_lr)
            else:
                self._set_lr(runner, self.get_warmup_lr(cur_iter))
        elif self.warmup is not None and cur_iter <= self.warmup_iters:
            if not self.regular_lr:  # a run resumed inside an epoch
                self.regular_lr = self.get_regular_lr(runner)
            self._set_lr(runner, self.regular_lr if cur_iter == self.warmup_iters
                         else self.get_warmup_lr(cur_iter))

    def _mmcv_state(self) -> dict[str, Any]:
        return {"base_lr": self.base_lr} if self.base_lr else {}

    def _mmcv_load_state(self, state: dict[str, Any]) -> None:
        if state.get("base_lr"):
            self.base_lr = state["base_lr"]

    # -- dispatch -----------------------------------------------------------------------------
    def triggered_stages(self) -> list[str]:
        """mmcv's stages when the class runs mmcv's algorithm, else the torch schedulers'
        (a stage the subclass overrides itself always runs)."""
        cls = type(self)
        base = cls.__mro__[_depth(cls)]
        if cls.mmcv_driven:
            hidden = [s for s in _TORCH_STAGES if getattr(cls, s) is getattr(base, s)]
        else:
            hidden = [s for s in _MMCV_STAGES if getattr(cls, s) is getattr(MmcvLrSchedule, s)]
        return [s for s in super().triggered_stages() if s not in hidden]

    #: wraps a stage call so that it gets mmcv's view of the Runner: set by
    #: ``hookline.compat.mmcv`` when it is imported (as ported code imports it); this layer
    #: does not import that one. None: the stages get the Runner itself
    stage_wrapper: ClassVar[Callable[[StageMethod, Any, str], StageMethod] | None] = None

    def stage_callable(self, stage: str) -> StageMethod:
        """With mmcv's algorithm, stages get the Runner's mmcv view, as mmcv hooks do."""
        call = super().stage_callable(stage)
        wrap = MmcvLrSchedule.stage_wrapper
        return wrap(call, self, stage) if self.mmcv_driven and wrap is not None else call


def _depth(cls: type) -> int:
    """The index in ``cls.__mro__`` of the class that mixes :class:`MmcvLrSchedule` in."""
    return next(i for i, c in enumerate(cls.__mro__) if MmcvLrSchedule in c.__bases__)
