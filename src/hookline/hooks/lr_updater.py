"""LrUpdaterHook: mmcv's ``lr_config`` on torch schedulers (and the policy tables it
shares with :class:`~hookline.hooks.MomentumUpdaterHook`).

``LrUpdaterHook`` translates an mmcv policy into ``torch.optim.lr_scheduler``
schedulers (docs/optim_and_checkpoints.md has the table) and steps them:
the warm-up scheduler after every iteration (mmcv's warm-up counts
iterations), the policy's scheduler after every epoch (``by_epoch=True``) or
iteration. The learning rate is ``base * policy(t) * warmup(t)`` as in mmcv
(the policy counts from iteration 0 and the warm-up scales it), where each
factor is what that torch scheduler gives alone. Iteration ``i`` (0-based)
trains with the lr after ``i`` steps. The state goes into checkpoints. A subclass
overriding ``get_lr`` runs mmcv's own algorithm (:mod:`.lr_updater_mmcv`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.optim import lr_scheduler as ts
from torch.optim.lr_scheduler import LRScheduler

from hookline.core import ConfigError
from hookline.engine.checks import positive_int
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS, PARAM_SCHEDULERS

from .lr_updater_mmcv import MmcvLrSchedule
from .updater_lengths import needs_run_length, run_length, warmup_iterations

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

_REQUIRED = object()

#: policy -> {argument: default}; mmcv's names and defaults
LR_POLICIES: dict[str, dict[str, Any]] = {
    "fixed": {},
    "step": {"step": _REQUIRED, "gamma": 0.1},
    "exp": {"gamma": _REQUIRED},
    "poly": {"power": 1.0, "min_lr": 0.0},
    "cosine": {"min_lr": None, "min_lr_ratio": None},
    "linear": {"min_lr": None, "min_lr_ratio": None},
    "onecycle": {"max_lr": _REQUIRED, "total_steps": None, "pct_start": 0.3,
                 "anneal_strategy": "cos", "div_factor": 25.0, "final_div_factor": 1e4,
                 "three_phase": False},
}
MOMENTUM_POLICIES: dict[str, dict[str, Any]] = {
    "step": {"step": _REQUIRED, "gamma": 0.5, "min_momentum": None},
    "cosine": {"min_momentum": None, "min_momentum_ratio": None},
    "linear": {"min_momentum": None, "min_momentum_ratio": None},
    "onecycle": {"base_momentum": 0.85, "max_momentum": 0.95, "pct_start": 0.3,
                 "anneal_strategy": "cos", "three_phase": False},
}
_ALIASES = {"cosineannealing": "cosine", "linearannealing": "linear"}
WARMUPS = (None, "linear", "constant", "exp")


def _policy_args(kind: str, policy: Any, args: dict, table: dict) -> tuple[str, dict]:
    name = str(policy).lower().replace("_", "")
    name = _ALIASES.get(name, name)
    if name not in table:
        raise ConfigError(f"{kind} policy {policy!r} is not supported; accepted: "
                          f"{', '.join(table)} (plus 'CosineAnnealing', 'LinearAnnealing', 'OneCycle' "
                          "spellings); for others use ParamSchedulerHook with a torch scheduler")
    accepted = table[name]
    unknown = sorted(set(args) - set(accepted))
    if unknown:
        raise ConfigError(f"{kind} policy {name!r} got unknown argument(s) {unknown}; accepted: "
                          f"{sorted(accepted)}")
    merged = {k: args.get(k, v) for k, v in accepted.items()}
    missing = [k for k, v in merged.items() if v is _REQUIRED]
    if missing:
        raise ConfigError(f"{kind} policy {name!r} needs {missing}")
    return name, merged


def _check_step(step: Any, kind: str) -> None:
    ok = (isinstance(step, int) and step > 0) or (
        isinstance(step, (list, tuple)) and step and all(isinstance(s, int) and s >= 0 for s in step)
        and list(step) == sorted(step))
    if not ok:
        raise ConfigError(f"{kind} policy 'step' needs step=int > 0 or an increasing list of "
                          f"ints, got {step!r}")


def _check_warmup(kind: str, warmup: Any, warmup_iters: Any, warmup_ratio: Any) -> None:
    if warmup not in WARMUPS:
        raise ConfigError(f"warmup must be one of {WARMUPS}, got {warmup!r}")
    if warmup is not None:
        positive_int(warmup_iters, f"warmup_iters (with warmup={warmup!r})", owner=kind)
        if not isinstance(warmup_ratio, (int, float)) or not 0 < warmup_ratio <= 1:
            raise ConfigError(f"warmup_ratio must be in (0, 1], got {warmup_ratio!r}")


# -- schedulers torch lacks, for mmcv's policies (chainable like torch's own) ------------------

@PARAM_SCHEDULERS.register()
class PolyLR(LRScheduler):
    """Polynomial decay to ``eta_min``: ``eta_min + (base_lr - eta_min) * (1 - t / total_iters) ** power``.

    torch's ``PolynomialLR`` decays to 0; this is MMEngine's ``PolyLR`` (and
    mmcv's ``poly`` policy with ``min_lr``). Like torch's schedulers it updates
    the current lr recursively, so it chains with warm-up schedulers.

    Example::

        >>> import torch
        >>> opt = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = PolyLR(opt, total_iters=4, power=1.0, eta_min=0.2)
        >>> for _ in range(4):
        ...     opt.step(); sched.step()
        >>> round(opt.param_groups[0]["lr"], 6)
        0.2
    """

    def __init__(self, optimizer: torch.optim.Optimizer, total_iters: int = 5, power: float = 1.0,
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.total_iters: int = positive_int(total_iters, "total_iters", owner="PolyLR")
        self.power = power
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float | torch.Tensor]:
        t = self.last_epoch
        if t == 0 or t > self.total_iters:
            return [group["lr"] for group in self.optimizer.param_groups]
        factor = (1.0 - 1.0 / (self.total_iters - t + 1)) ** self.power
        return [(group["lr"] - self.eta_min) * factor + self.eta_min
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        done = min(self.last_epoch, self.total_iters) / self.total_iters
        return [self.eta_min + (base - self.eta_min) * (1.0 - done) ** self.power
                for base in self.base_lrs]


@PARAM_SCHEDULERS.register()
class ExponentialWarmupLR(LRScheduler):
    """mmcv's ``warmup="exp"``: factor ``start_factor ** (1 - t / total_iters)`` up to 1.

    Example::

        >>> import torch
        >>> opt = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = ExponentialWarmupLR(opt, start_factor=0.01, total_iters=2)
        >>> lrs = [opt.param_groups[0]["lr"]]
        >>> for _ in range(3):
        ...     opt.step(); sched.step(); lrs.append(opt.param_groups[0]["lr"])
        >>> [round(lr, 6) for lr in lrs]
        [0.01, 0.1, 1.0, 1.0]
    """

    def __init__(self, optimizer: torch.optim.Optimizer, start_factor: float = 0.1,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if not 0 < start_factor <= 1:
            raise ConfigError(f"ExponentialWarmupLR start_factor must be in (0, 1], got "
                              f"{start_factor!r}")
        self.start_factor = start_factor
        self.total_iters: int = positive_int(total_iters, "total_iters", owner="ExponentialWarmupLR")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float | torch.Tensor]:
        t = self.last_epoch
        if t == 0:
            return [group["lr"] * self.start_factor for group in self.optimizer.param_groups]
        if t > self.total_iters:
            return [group["lr"] for group in self.optimizer.param_groups]
        factor = self.start_factor ** (-1.0 / self.total_iters)
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        done = min(self.last_epoch, self.total_iters) / self.total_iters
        return [base * self.start_factor ** (1.0 - done) for base in self.base_lrs]


class _UpdaterBase(Hook):
    def __init__(self, kind: str, table: dict, policy: Any, by_epoch: bool | None, warmup: Any,
                 warmup_iters: int, warmup_ratio: float, warmup_by_epoch: bool,
                 args: dict[str, Any]) -> None:
        self.policy, self.args = _policy_args(kind, policy, args, table)
        if self.policy == "onecycle":
            if by_epoch:
                raise ConfigError(f"{kind} policy 'onecycle' runs by iteration: by_epoch must "
                                  "be False")
            if warmup is not None:
                raise ConfigError(f"{kind} policy 'onecycle' has its own warm-up phase "
                                  "(pct_start); remove warmup")
            by_epoch = False
        if "step" in self.args:
            _check_step(self.args["step"], kind)
        _check_warmup(kind, warmup, warmup_iters, warmup_ratio)
        self.by_epoch = True if by_epoch is None else bool(by_epoch)
        self.warmup = warmup
        self.warmup_iters = warmup_iters
        self.warmup_ratio = warmup_ratio
        self.warmup_by_epoch = warmup_by_epoch

    def _warmup_length(self, runner: Runner) -> int:
        return warmup_iterations(runner, self.warmup_iters, warmup_by_epoch=self.warmup_by_epoch,
                                 kind=type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(policy={self.policy!r}, by_epoch={self.by_epoch}, " \
               f"warmup={self.warmup!r}, {', '.join(f'{k}={v!r}' for k, v in self.args.items())})"


@HOOKS.register()
class LrUpdaterHook(_UpdaterBase, MmcvLrSchedule):
    """mmcv's ``lr_config`` on torch schedulers: ``policy`` plus warm-up.

    Args:
        policy: ``"fixed"``, ``"step"`` (``step``: int or list of epochs/iters,
            ``gamma=0.1``), ``"exp"`` (``gamma``), ``"poly"`` (``power=1``,
            ``min_lr=0``), ``"cosine"`` / ``"CosineAnnealing"`` (``min_lr`` or
            ``min_lr_ratio``), ``"linear"`` / ``"LinearAnnealing"`` (``min_lr``
            or ``min_lr_ratio``), ``"onecycle"`` (``max_lr``, ``total_steps``,
            ``pct_start=0.3``, ``anneal_strategy="cos"``, ``div_factor=25``,
            ``final_div_factor=1e4``, ``three_phase=False``; by iteration).
        by_epoch: the policy counts epochs (True, default) or iterations.
        warmup: None, ``"linear"``, ``"constant"`` or ``"exp"``; always by iteration.
        warmup_iters: warm-up length in iterations (epochs with ``warmup_by_epoch``).
        warmup_ratio: the warm-up starts at ``warmup_ratio * lr``.
        **policy_args: the policy's arguments listed above.

    A subclass overriding ``get_lr`` / ``get_warmup_lr`` runs as in mmcv (:mod:`.lr_updater_mmcv`).

    Example::

        >>> LrUpdaterHook(policy="CosineAnnealing", min_lr=1e-5, by_epoch=False).policy
        'cosine'
    """

    priority = "LOW"

    def __init__(self, policy: str = "fixed", by_epoch: bool | None = None,
                 warmup: str | None = None, warmup_iters: int = 0, warmup_ratio: float = 0.1,
                 warmup_by_epoch: bool = False, **policy_args: Any) -> None:
        super().__init__("LrUpdaterHook", LR_POLICIES, policy, by_epoch, warmup, warmup_iters,
                         warmup_ratio, warmup_by_epoch, policy_args)
        a = self.args
        if self.policy in ("cosine", "linear") and a["min_lr"] is not None \
                and a["min_lr_ratio"] is not None:
            raise ConfigError(f"policy {self.policy!r}: give min_lr or min_lr_ratio, not both")
        #: [(scheduler, steps per epoch)]: the warm-up (if any), then the policy's (if any)
        self.schedulers: list[tuple[Any, bool]] | None = None
        self.base_lrs: list[float] = []
        self._warm: Any = None
        self._main: Any = None
        self._pending: dict | None = None
        self._mmcv_setup()

    # -- building ---------------------------------------------------------------------------
    def before_run(self, runner: Runner) -> None:
        """Build the schedulers before a checkpoint is resumed, so their state is restored."""
        if self.mmcv_driven:
            return self._mmcv_before_run(runner)
        if self.schedulers is None and runner.optimizer is not None \
                and runner.train_dataloader is not None:
            self.build(runner.optimizer, runner)
            if self._pending is not None:
                self.load_state_dict(self._pending)

    def before_train(self, runner: Runner) -> None:
        if self.mmcv_driven:
            return self._mmcv_before_train(runner)
        if self.schedulers is None:
            raise ConfigError("LrUpdaterHook needs an optimizer: pass optimizer= to the Runner")
        if runner.param_schedulers:
            runner.logger.warning("LrUpdaterHook sets the learning rate itself: the Runner's "
                                  "param_scheduler is overridden every step; use one or the other")

    def build(self, optimizer: torch.optim.Optimizer, runner: Runner) -> list[tuple[Any, bool]]:
        """Build the torch schedulers for ``runner``'s length and set the first lr.

        Each scheduler runs alone, exactly as torch computes it, on a private
        copy of the param groups' learning rates; the optimizer's lr is the
        product of their factors (``base * policy(t) * warmup(t)``: mmcv's
        semantics, which chaining both on one optimizer would only approximate
        for schedulers with a floor such as ``eta_min``).
        """
        total = run_length(runner, by_epoch=self.by_epoch, kind="LrUpdaterHook")
        self.base_lrs = [float(g["lr"]) for g in optimizer.param_groups]
        self.schedulers = []
        if self.warmup is not None:
            iters, shadow = self._warmup_length(runner), _shadow(self.base_lrs)
            self._warm = {"linear": lambda: ts.LinearLR(shadow, self.warmup_ratio, 1.0, iters),
                          "constant": lambda: ts.ConstantLR(shadow, self.warmup_ratio, iters),
                          "exp": lambda: ExponentialWarmupLR(shadow, self.warmup_ratio, iters),
                          }[self.warmup]()
            self.schedulers.append((self._warm, False))
        if self.policy != "fixed":
            self._main = self._policy(_shadow(self.base_lrs), total, runner)
            self.schedulers.append((self._main, self.by_epoch))
        for scheduler, _ in self.schedulers:
            scheduler.optimizer.step()  # no gradients: a no-op that tells torch the order is right
        self._apply(optimizer)
        return self.schedulers

    def _policy(self, shadow: torch.optim.Optimizer, total: int | None, runner: Runner) -> Any:
        a, policy = self.args, self.policy

        def length() -> int:
            if total is None:
                raise needs_run_length(runner, "LrUpdaterHook", policy)
            return total

        if policy == "step":
            if isinstance(a["step"], int):
                return ts.StepLR(shadow, a["step"], a["gamma"])
            return ts.MultiStepLR(shadow, list(a["step"]), a["gamma"])
        if policy == "exp":
            return ts.ExponentialLR(shadow, a["gamma"])
        if policy == "poly":
            if not a["min_lr"]:
                return ts.PolynomialLR(shadow, length(), a["power"])
            return PolyLR(shadow, length(), a["power"], a["min_lr"])
        if policy == "cosine":
            return ts.CosineAnnealingLR(shadow, length(), self._eta_min())
        if policy == "linear":
            end = a["min_lr_ratio"] if a["min_lr_ratio"] is not None else \
                self._eta_min() / self._single_lr("min_lr")
            return ts.LinearLR(shadow, 1.0, end, length())
        return ts.OneCycleLR(
            shadow, a["max_lr"], total_steps=a["total_steps"] or length(),
            pct_start=a["pct_start"], anneal_strategy=a["anneal_strategy"],
            div_factor=a["div_factor"], final_div_factor=a["final_div_factor"],
            three_phase=a["three_phase"], cycle_momentum=False)

    def _eta_min(self) -> float:
        a = self.args
        if a["min_lr_ratio"] is not None:
            return a["min_lr_ratio"] * self._single_lr("min_lr_ratio")
        return a["min_lr"] or 0.0

    def _single_lr(self, what: str) -> float:
        lrs = set(self.base_lrs)
        if len(lrs) != 1:
            raise ConfigError(f"{what} with param groups of different learning rates {sorted(lrs)} "
                              "cannot be expressed by one torch eta_min; give min_lr")
        return lrs.pop()

    def _apply(self, optimizer: torch.optim.Optimizer) -> None:
        """optimizer lr = the policy's lr (or the base lr) times the warm-up's factor."""
        main = self._main.optimizer.param_groups if self._main is not None else None
        warm = self._warm.optimizer.param_groups if self._warm is not None else None
        for k, group in enumerate(optimizer.param_groups):
            base = self.base_lrs[k]
            lr = main[k]["lr"] if main is not None else base
            if warm is not None and base:
                lr = lr * (warm[k]["lr"] / base)
            group["lr"] = lr

    # -- stepping ----------------------------------------------------------------------------
    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        self._step(runner, per_epoch=False)

    def after_train_epoch(self, runner: Runner) -> None:
        if runner.by_epoch:
            self._step(runner, per_epoch=True)

    def _step(self, runner: Runner, per_epoch: bool) -> None:
        """Step the schedulers that count iterations (or epochs), then set the lr."""
        if self.schedulers is None or runner.optimizer is None:
            return  # mmcv's algorithm sets it before each iteration (a subclass's super() call)
        for scheduler, by_epoch in self.schedulers:
            if by_epoch == per_epoch:
                scheduler.step()
        self._apply(runner.optimizer)

    # -- state -------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        if self.schedulers is None:
            return self._mmcv_state() if self.mmcv_driven else {}
        return {"base_lrs": list(self.base_lrs),
                "schedulers": [s.state_dict() for s, _ in self.schedulers],
                "lrs": [[g["lr"] for g in s.optimizer.param_groups] for s, _ in self.schedulers]}

    def load_state_dict(self, state: dict) -> None:
        if self.mmcv_driven:
            return self._mmcv_load_state(state)
        if self.schedulers is None:
            self._pending = state
            return
        states = state.get("schedulers", [])
        if len(states) != len(self.schedulers):
            raise ConfigError(f"LrUpdaterHook: the checkpoint holds {len(states)} schedulers, this "
                              f"configuration builds {len(self.schedulers)}: was the policy or "
                              "warmup changed?")
        self.base_lrs = [float(v) for v in state["base_lrs"]]
        for (scheduler, _), saved, lrs in zip(self.schedulers, states, state["lrs"]):
            scheduler.load_state_dict(saved)
            for group, lr in zip(scheduler.optimizer.param_groups, lrs):
                group["lr"] = lr
        self._pending = None


def _shadow(lrs: list[float]) -> torch.optim.Optimizer:
    """A stand-in optimizer holding only learning rates, for one scheduler to run on alone."""
    return torch.optim.SGD([{"params": [torch.nn.Parameter(torch.zeros(1))], "lr": lr}
                            for lr in lrs], lr=lrs[0] if lrs else 0.0)
