"""EMAHook: an exponential moving average of the weights, swapped in for validation and test.

The average is a :class:`torch.optim.swa_utils.AveragedModel` with
``multi_avg_fn=get_ema_multi_avg_fn(decay)``, updated after the optimizer
step. Checkpoints keep the *raw* (trained) weights in ``state_dict`` and the
averaged ones in the hook's state, so resuming continues both exactly.

Example::

    >>> from hookline.hooks import EMAHook
    >>> hook = EMAHook(decay=0.99, interval=1, begin_iter=100)
    >>> hook.triggered_stages()[:2]
    ['before_run', 'after_train_iter']
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from hookline.core import ConfigError
from hookline.engine.checkpoint import load_checkpoint_file
from hookline.engine.checks import boolean, finite_float, non_negative_int, positive_int
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

from .logger import EVAL_WEIGHTS_KEY

if TYPE_CHECKING:
    from hookline.engine.runner import Runner

_PREFIX = "module."


@HOOKS.register()
class EMAHook(Hook):
    """Keeps an exponential moving average (EMA) of the model's weights and evaluates
    with it: validation and test see the averaged weights.

    After the optimizer step of every ``interval``-th iteration (from
    ``begin_iter`` on) the average is updated as
    ``ema = decay * ema + (1 - decay) * weights`` (its first update copies the
    weights). During validation and test the averaged weights are swapped
    into ``runner.model`` and swapped back afterwards, so training always
    continues from the raw weights. The val/test records of ``metrics.jsonl``
    computed with the average carry ``"weights": "ema"`` (the hook sets
    ``message_hub.info["eval_weights"]`` for LoggerHook), so ``curves.png``
    labels that line ``val (EMA weights)``.

    What a checkpoint holds: ``checkpoint["state_dict"]`` is always the raw
    model, also for checkpoints written during validation (the best
    checkpoint of :class:`CheckpointHook` included); the averaged weights are
    the hook's state, ``checkpoint["hooks"]["EMAHook"]["ema"]`` (the
    ``AveragedModel`` state: ``module.<name>`` entries and ``n_averaged``;
    ``["averaged"]`` names the averaged tensors).
    :meth:`weights_from_checkpoint` turns them into a state dict for the model.
    Updates cost no host-device sync.

    Args:
        decay: weight of the old average, in [0, 1]; 0.999 averages over
            roughly the last 1000 updates.
        interval: update every ``interval`` iterations (with gradient
            accumulation, set it to the accumulation count).
        begin_iter: iterations before this (0-based, like ``runner.iter``)
            are not averaged; until the first update, validation uses the
            raw weights.
        update_buffers: average buffers (e.g. BatchNorm statistics) too;
            when False the model's current buffers are used as they are.

    Example::

        runner = Runner(model, ..., hooks=[EMAHook(decay=0.998)])
        runner.train()                    # validation scores the EMA weights
        model.load_state_dict(EMAHook.weights_from_checkpoint("work_dir/epoch_10.pth"))
    """

    # after OptimizerHook (ABOVE_NORMAL) has stepped; before CheckpointHook (VERY_LOW)
    priority = "NORMAL"

    def __init__(self, decay: float = 0.999, interval: int = 1, begin_iter: int = 0,
                 update_buffers: bool = False) -> None:
        finite_float(decay, "decay", owner="EMAHook", low=0, high=1)
        positive_int(interval, "interval", owner="EMAHook")
        non_negative_int(begin_iter, "begin_iter", owner="EMAHook")
        boolean(update_buffers, "update_buffers", owner="EMAHook")
        self.decay = float(decay)
        self.interval = interval
        self.begin_iter = begin_iter
        self.update_buffers = update_buffers
        self._avg_fn = get_ema_multi_avg_fn(self.decay)
        self.ema: AveragedModel | None = None
        self._model: torch.nn.Module | None = None
        self._started = False  # host-side copy of n_averaged > 0 (no device sync to check)
        self._swapped = False
        self._pending: Mapping[str, Any] | None = None

    # -- the average ----------------------------------------------------------------
    @property
    def ema_model(self) -> torch.nn.Module | None:
        """The averaged copy of the model (None before the run starts)."""
        return None if self.ema is None else self.ema.module

    def before_run(self, runner: Runner) -> None:
        if self.ema is None or self._model is not runner.model:
            self._model = runner.model
            # n_averaged stays on the CPU (no device argument): checking it never syncs
            self.ema = AveragedModel(runner.model, multi_avg_fn=self._avg_fn,
                                     use_buffers=self.update_buffers)
            self.ema.requires_grad_(False)
            self._started = self._swapped = False
        if self._pending is not None:
            pending, self._pending = self._pending, None
            self.load_state_dict(pending)

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        if runner.iter < self.begin_iter or (runner.iter + 1) % self.interval:
            return
        self.update(runner.model)

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        """One EMA step towards ``model``'s weights.

        The same arithmetic as ``AveragedModel.update_parameters`` (which it
        calls for the first, copying step), minus that method's per-call copy
        of ``n_averaged`` to the device, which would be a host-device sync on
        every update on GPUs.
        """
        ema = self._average()
        if not self._started:  # the first step copies the weights
            ema.update_parameters(model)
            self._started = True
            return
        averaged, current = self._tensors(ema.module), self._tensors(model)
        groups: dict[tuple, tuple[list, list]] = {}
        for mine, theirs in zip(averaged, current):
            group = groups.setdefault((mine.device, mine.dtype), ([], []))
            group[0].append(mine.detach())
            group[1].append(theirs.detach().to(mine.device))
        for targets, sources in groups.values():
            self._avg_fn(targets, sources, ema.n_averaged)
        if not self.update_buffers:  # keep the copy's buffers in step with the model
            for mine, theirs in zip(ema.module.buffers(), model.buffers()):
                mine.detach().copy_(theirs.detach().to(mine.device))
        ema.n_averaged += 1

    def _average(self) -> AveragedModel:
        """The average, which ``before_run`` builds."""
        if self.ema is None:
            raise RuntimeError("EMAHook: no average yet; before_run builds it from runner.model")
        return self.ema

    def _tensors(self, module: torch.nn.Module) -> list[torch.Tensor]:
        if self.update_buffers:
            return [*module.parameters(), *module.buffers()]
        return list(module.parameters())

    # -- swapping for evaluation ---------------------------------------------------------
    def _names(self) -> list[str]:
        """Names of the tensors that are averaged (and swapped)."""
        module = self._average().module
        names = [name for name, _ in module.named_parameters()]
        if self.update_buffers:
            names += [name for name, _ in module.named_buffers()]
        return names

    def _pairs(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        model = self._model
        assert model is not None  # set with the average, in before_run
        return list(zip(self._tensors(model), self._tensors(self._average().module)))

    @torch.no_grad()
    def _swap(self) -> None:
        for live, averaged in self._pairs():
            kept = live.detach().clone()
            live.copy_(averaged)
            averaged.copy_(kept)
        self._swapped = not self._swapped

    def _swap_in(self, runner: Runner) -> None:
        """Swap the average in (once it has had an update) and say which weights this
        evaluation uses: ``"ema"`` in ``message_hub.info[EVAL_WEIGHTS_KEY]``, which
        LoggerHook writes into the val/test record as ``"weights": "ema"``."""
        if self.ema is not None and self._started and not self._swapped:
            self._swap()
        if self._swapped:
            runner.message_hub.info[EVAL_WEIGHTS_KEY] = "ema"
        else:  # before the first update: the raw weights
            runner.message_hub.info.pop(EVAL_WEIGHTS_KEY, None)

    def _swap_out(self, runner: Runner, *args: Any, **kwargs: Any) -> None:
        if self._swapped:
            self._swap()

    def before_val_epoch(self, runner: Runner) -> None:
        self._swap_in(runner)

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._swap_out(runner)

    def before_test_epoch(self, runner: Runner) -> None:
        self._swap_in(runner)

    def after_test_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        self._swap_out(runner)

    def on_exception(self, runner: Runner, exception: BaseException) -> None:
        self._swap_out(runner)

    def before_save_checkpoint(self, runner: Runner, checkpoint: dict) -> None:
        """A save during evaluation still stores the raw weights as ``state_dict``."""
        if not self._swapped:
            return
        weights = checkpoint.get("state_dict", {})
        raw = self._average().module.state_dict()  # while swapped, the raw weights live here
        for name in self._names():
            if name in weights:
                weights[name] = raw[name].detach().cpu().clone()

    # -- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict:
        if self.ema is None or self._model is None:  # both are set in before_run
            return dict(self._pending or {})
        ema_state = dict(self.ema.state_dict())
        if self._swapped:  # the averaged weights are in the model right now
            live = self._model.state_dict()
            for name in self._names():
                if name in live:
                    ema_state[_PREFIX + name] = live[name].detach().clone()
        return {"ema": ema_state, "averaged": self._names(), "decay": self.decay}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if not state:
            return
        if self.ema is None:  # loaded before the run built the average: apply in before_run
            self._pending = state
            return
        if self._swapped:
            self._swap()
        self.ema.load_state_dict(state["ema"])
        self._started = int(self.ema.n_averaged) > 0

    @staticmethod
    def weights_from_checkpoint(checkpoint: Mapping[str, Any] | str | Path,
                                key: str = "EMAHook") -> dict[str, torch.Tensor]:
        """The averaged weights in a checkpoint, as a state dict for the model.

        ``checkpoint`` is a loaded checkpoint dict or a path; names and
        buffers missing from the average (``update_buffers=False``) come from
        the checkpoint's raw ``state_dict``.
        """
        if not isinstance(checkpoint, Mapping):
            checkpoint = load_checkpoint_file(checkpoint, map_location="cpu")
        hooks = checkpoint.get("hooks", {})
        if key not in hooks or "ema" not in hooks[key]:
            raise ConfigError(f"the checkpoint has no EMA state under hooks[{key!r}]; hook states "
                              f"present: {sorted(hooks)}")
        ema, averaged = hooks[key]["ema"], hooks[key].get("averaged")
        weights = dict(checkpoint.get("state_dict", {}))
        for name, value in ema.items():
            if name.startswith(_PREFIX) and (averaged is None or name[len(_PREFIX):] in averaged):
                weights[name[len(_PREFIX):]] = value
        return weights

    def __repr__(self) -> str:
        return (f"EMAHook(decay={self.decay}, interval={self.interval}, "
                f"begin_iter={self.begin_iter}, update_buffers={self.update_buffers})")
