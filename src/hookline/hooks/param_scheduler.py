"""ParamSchedulerHook: steps ``torch.optim.lr_scheduler`` schedulers per epoch or iteration.

The schedulers come from the Runner's ``param_scheduler`` argument (objects
or configs naming any ``torch.optim.lr_scheduler`` class); their state is
saved in checkpoints by the Runner. For mmcv's ``lr_config`` style see
:class:`~hookline.hooks.LrUpdaterHook`; ``MomentumUpdaterHook`` (here) is
mmcv's ``momentum_config``, and mmcv's per-policy class names
(``StepLrUpdaterHook``, ``OneCycleMomentumUpdaterHook`` ...) are registered here.

Example::

    >>> from hookline.hooks import ParamSchedulerHook
    >>> ParamSchedulerHook().triggered_stages()
    ['before_run', 'before_train', 'after_train_iter', 'after_train_epoch', 'after_val_epoch']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torch.optim.lr_scheduler import ReduceLROnPlateau

from hookline.core import ConfigError
from hookline.engine.data import loader_length
from hookline.engine.hook import Hook
from hookline.engine.metric_names import monitored_number
from hookline.engine.registries import HOOKS
from hookline.engine.schedule_length import SchedulerSteps, check_run_length
from hookline.engine.schedulers_per_optimizer import scheduler_pairs

from .lr_updater import MOMENTUM_POLICIES, LrUpdaterHook, _UpdaterBase
from .lr_updater_mmcv import anneal
from .updater_lengths import needs_run_length, run_length

if TYPE_CHECKING:
    from hookline.engine.runner import Runner


@HOOKS.register()
class ParamSchedulerHook(Hook):
    """Steps ``runner.param_schedulers`` (each scheduler carries ``by_epoch``).

    * ``by_epoch`` schedulers step after each training epoch (in an
      iteration-based run: every ``len(train_dataloader)`` iterations);
    * the others step after each iteration, so iteration ``i`` (0-based)
      trains with the value the scheduler gives after ``i`` steps; with
      gradient accumulation, after each optimizer step (Lightning's rule),
      except schedulers whose class sets ``steps_every_iteration`` (MMEngine's,
      ``hookline.compat.mmengine.optim``: every iteration, as MMEngine steps them);
    * ReduceLROnPlateau steps after each validation during training, on its
      ``monitor`` metric (default ``"loss"``); a standalone ``runner.val()``
      does not step it.

    Before training it warns (one line) when the run outlasts a fixed
    CosineAnnealingLR ``T_max`` (the LR would cycle back up) and raises
    :class:`ConfigError` when it outlasts a OneCycleLR's ``total_steps``
    (see :mod:`hookline.engine.schedule_length`; a ``T_max`` left out of the
    config follows the run).

    Example::

        >>> import torch
        >>> opt = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
        >>> plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
        >>> plateau.monitor = "accuracy"   # or {"type": "ReduceLROnPlateau", "monitor": ...}
    """

    priority = "LOW"

    def __init__(self) -> None:
        self._per_iter: list = []
        self._every_iter: list = []
        self._per_epoch: list = []
        self._plateau: list = []
        self._epoch_length: int | None = None
        self._training = False

    def before_run(self, runner: Runner) -> None:
        self._training = False

    def before_train(self, runner: Runner) -> None:
        pairs = scheduler_pairs(runner.param_schedulers)
        per_iter = [s for s, by_epoch in pairs
                    if not by_epoch and not isinstance(s, ReduceLROnPlateau)]
        self._every_iter = [s for s in per_iter if getattr(s, "steps_every_iteration", False)]
        self._per_iter = [s for s in per_iter if s not in self._every_iter]
        self._per_epoch = [s for s, by_epoch in pairs
                           if by_epoch and not isinstance(s, ReduceLROnPlateau)]
        self._plateau = [s for s, _ in pairs if isinstance(s, ReduceLROnPlateau)]
        self._epoch_length = None if runner.by_epoch else loader_length(runner.train_dataloader)
        self._training = True
        # after a resume too: the checkpoint's T_max / total_steps are the ones that run
        steps = SchedulerSteps.of_run(runner.train_loop, runner.optim_wrapper)
        for warning in check_run_length(pairs, steps):
            runner.logger.warning("%s", warning)
        if self._plateau and runner.val_dataloader is None and not any(
                any(c.__name__ == "EvalHook" for c in type(h).__mro__) for h in runner.hooks.hooks):
            runner.logger.warning("ReduceLROnPlateau steps after validation, but this run has "
                                  "no val_dataloader (nor EvalHook): it will never step")

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        if self._per_iter:
            wrapper = runner.optim_wrapper
            if wrapper is None or wrapper.should_step_schedulers():  # once per optimizer step
                for scheduler in self._per_iter:
                    scheduler.step()
        for scheduler in self._every_iter:  # MMEngine's: after every iteration, accumulated or not
            scheduler.step()
        if self._epoch_length and (runner.iter + 1) % self._epoch_length == 0:
            for scheduler in self._per_epoch:
                scheduler.step()

    def after_train_epoch(self, runner: Runner) -> None:
        if self._epoch_length is None:
            for scheduler in self._per_epoch:
                scheduler.step()

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        if not self._training:
            return
        for scheduler in self._plateau:
            monitor = getattr(scheduler, "monitor", "loss")
            value = monitored_value(runner, monitor, metrics or {})
            if value is None:
                raise ConfigError(
                    f"ReduceLROnPlateau monitors {monitor!r} but validation gave "
                    f"{sorted(metrics or {})}; set 'monitor' in its config")
            scheduler.step(monitored_number(value, monitor, "ReduceLROnPlateau monitor"))


def monitored_value(runner: Runner, monitor: str, metrics: Mapping[str, Any]) -> Any:
    """The value of ``monitor`` after a validation, None when there is none: the validation
    metric of that name; else a value a LightningModule logged under it (a Lightning trainer
    facade's ``callback_metrics``, e.g. a training value); else, for Lightning's
    ``"val_<name>"`` / ``"val/<name>"``, the validation metric ``<name>``.

    Example::

        >>> from types import SimpleNamespace
        >>> runner = SimpleNamespace(hooks=SimpleNamespace(hooks=[]))
        >>> monitored_value(runner, "val_loss", {"loss": 0.5}), monitored_value(runner, "acc", {})
        (0.5, None)
    """
    if monitor in metrics:
        return metrics[monitor]
    for hook in runner.hooks.hooks:  # the trainer facade of a run with Lightning objects
        logged = getattr(hook, "callback_metrics", None)
        if isinstance(logged, Mapping) and monitor in logged:
            return float(logged[monitor])
    for prefix in ("val_", "val/"):
        if monitor.startswith(prefix) and monitor[len(prefix):] in metrics:
            return metrics[monitor[len(prefix):]]
    return None


@HOOKS.register()
class MomentumUpdaterHook(_UpdaterBase):
    """mmcv's ``momentum_config``: sets ``momentum`` (SGD, RMSprop) or ``betas[0]`` (Adam ...).

    Before each training iteration the momentum is computed from the run's
    position (``runner.epoch`` with ``by_epoch``, else ``runner.iter``):

    * ``"step"``: ``base * gamma ** k`` after ``k`` milestones (``step``,
      ``gamma=0.5``, floored at ``min_momentum``);
    * ``"cosine"`` / ``"linear"``: anneal from ``base`` to ``min_momentum`` (or
      ``base * min_momentum_ratio``);
    * ``"onecycle"``: torch ``OneCycleLR``'s momentum cycle (``base_momentum``,
      ``max_momentum``, ``pct_start``, ``anneal_strategy``, ``three_phase``),
      by iteration.

    Warm-up (``warmup``, ``warmup_iters``, ``warmup_ratio``) divides the
    momentum by mmcv's warm-up factor during the first iterations, as mmcv does.
    The base momenta are the hook's state, so resume is exact.

    Example::

        >>> MomentumUpdaterHook(policy="onecycle").args["max_momentum"]
        0.95
    """

    priority = "HIGH"

    def __init__(self, policy: str = "cosine", by_epoch: bool | None = None,
                 warmup: str | None = None, warmup_iters: int = 0, warmup_ratio: float = 0.9,
                 warmup_by_epoch: bool = False, **policy_args: Any) -> None:
        super().__init__("MomentumUpdaterHook", MOMENTUM_POLICIES, policy, by_epoch, warmup,
                         warmup_iters, warmup_ratio, warmup_by_epoch, policy_args)
        self.base_momentum: list[float] | None = None

    def before_run(self, runner: Runner) -> None:
        if self.base_momentum is None and runner.optimizer is not None:
            self.base_momentum = [self._get(g) for g in runner.optimizer.param_groups]

    def before_train(self, runner: Runner) -> None:
        if runner.optimizer is None:
            raise ConfigError("MomentumUpdaterHook needs an optimizer")
        group = runner.optimizer.param_groups[0]
        if "momentum" not in group and "betas" not in group:
            raise ConfigError(f"MomentumUpdaterHook: {type(runner.optimizer).__name__} has neither "
                              "'momentum' nor 'betas' in its param groups")
        total = run_length(runner, by_epoch=self.by_epoch, kind="MomentumUpdaterHook")
        total_iters = runner.max_iters  # None: a max_epochs run over a loader without a length
        if (total is None and self.policy in ("cosine", "linear")) or \
                (total_iters is None and self.policy == "onecycle"):
            raise needs_run_length(runner, "MomentumUpdaterHook", self.policy)
        self._total, self._total_iters = total or 0, total_iters or 0  # 0: not used
        self._warm = self._warmup_length(runner) if self.warmup else 0

    @staticmethod
    def _get(group: dict) -> float:
        if "momentum" in group:
            return float(group["momentum"])
        return float(group["betas"][0]) if "betas" in group else 0.0

    def before_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None) -> None:
        optimizer = runner.optimizer
        assert optimizer is not None  # before_train checked
        for group, value in zip(optimizer.param_groups, self.momenta(runner.epoch, runner.iter)):
            if "momentum" in group:
                group["momentum"] = value
            else:
                group["betas"] = (value, *tuple(group["betas"])[1:])

    def momenta(self, epoch: int, iteration: int) -> list[float]:
        """The momentum of each param group for the iteration after ``iteration`` finished ones."""
        if self.base_momentum is None:
            raise RuntimeError("MomentumUpdaterHook: no base momenta yet (before_run reads them "
                               "from the optimizer)")
        progress = epoch if self.by_epoch else iteration
        values = [self._regular(base, progress) for base in self.base_momentum]
        if iteration < self._warm:
            factor = self._warmup_factor(iteration)
            values = [v / factor for v in values]
        return values

    def _warmup_factor(self, iteration: int) -> float:
        ratio, done = self.warmup_ratio, iteration / self._warm
        if self.warmup == "constant":
            return ratio
        if self.warmup == "linear":
            return 1 - (1 - done) * (1 - ratio)
        return ratio ** (1 - done)

    def _regular(self, base: float, progress: int) -> float:
        a = self.args
        if self.policy == "step":
            step = a["step"]
            k = progress // step if isinstance(step, int) else sum(progress >= s for s in step)
            value = base * a["gamma"] ** k
            return max(value, a["min_momentum"]) if a["min_momentum"] is not None else value
        if self.policy in ("cosine", "linear"):
            target = base * a["min_momentum_ratio"] if a["min_momentum_ratio"] is not None \
                else (a["min_momentum"] or 0.0)
            return anneal("cos" if self.policy == "cosine" else "linear", base, target,
                           min(progress, self._total) / self._total)
        return self._onecycle(progress)

    def _onecycle(self, step: int) -> float:
        """torch ``OneCycleLR``'s momentum at ``step`` (its formula, phase by phase)."""
        a, total = self.args, self._total_iters
        low, high = a["base_momentum"], a["max_momentum"]
        if a["three_phase"]:
            phases = [(a["pct_start"] * total - 1, high, low),
                      (2 * a["pct_start"] * total - 2, low, high), (total - 1, high, high)]
        else:
            phases = [(a["pct_start"] * total - 1, high, low), (total - 1, low, high)]
        start = 0.0
        for i, (end, begin_value, end_value) in enumerate(phases):
            if step <= end or i == len(phases) - 1:
                return anneal(a["anneal_strategy"], begin_value, end_value,
                               (step - start) / (end - start))
            start = end
        raise AssertionError("unreachable")  # pragma: no cover

    def state_dict(self) -> dict:
        return {"base_momentum": list(self.base_momentum)} if self.base_momentum else {}

    def load_state_dict(self, state: dict) -> None:
        if state.get("base_momentum") is not None:
            self.base_momentum = [float(v) for v in state["base_momentum"]]


def _policy_class(name: str, base: type[LrUpdaterHook] | type[MomentumUpdaterHook],
                  policy: str) -> type:
    def __init__(self: Any, **kwargs: Any) -> None:
        base.__init__(self, policy=policy, **kwargs)

    doc = (f"mmcv's ``{name}``: :class:`{base.__name__}` with ``policy={policy!r}``.\n\n"
           f"Example::\n\n    >>> from hookline import HOOKS\n"
           f"    >>> HOOKS.get({name!r})().policy\n    {policy!r}\n") if policy != "step" else \
        f"mmcv's ``{name}``: :class:`{base.__name__}` with ``policy='step'``."
    cls = type(name, (base,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})
    return HOOKS.register(cls)


#: mmcv's per-policy class names (``lr_config=dict(policy="step")`` built ``StepLrUpdaterHook``)
MMCV_POLICY_HOOKS = {
    name: _policy_class(name, base, policy) for name, base, policy in (
        ("FixedLrUpdaterHook", LrUpdaterHook, "fixed"),
        ("StepLrUpdaterHook", LrUpdaterHook, "step"),
        ("ExpLrUpdaterHook", LrUpdaterHook, "exp"),
        ("PolyLrUpdaterHook", LrUpdaterHook, "poly"),
        ("CosineAnnealingLrUpdaterHook", LrUpdaterHook, "cosine"),
        ("LinearAnnealingLrUpdaterHook", LrUpdaterHook, "linear"),
        ("OneCycleLrUpdaterHook", LrUpdaterHook, "onecycle"),
    )
}


MMCV_MOMENTUM_HOOKS = {
    name: _policy_class(name, MomentumUpdaterHook, policy) for name, policy in (
        ("StepMomentumUpdaterHook", "step"),
        ("CosineAnnealingMomentumUpdaterHook", "cosine"),
        ("LinearAnnealingMomentumUpdaterHook", "linear"),
        ("OneCycleMomentumUpdaterHook", "onecycle"),
    )
}
