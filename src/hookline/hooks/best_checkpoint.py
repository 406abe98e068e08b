"""BestCheckpoint: tracks the best value of one validation metric and keeps its checkpoint.

Shared by :class:`~hookline.hooks.CheckpointHook` and :class:`~hookline.hooks.EvalHook`.

Example::

    >>> from hookline.hooks.best_checkpoint import BestCheckpoint
    >>> BestCheckpoint("val/mIoU").rule
    'greater'
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError
from hookline.core.errors import closest_names
from hookline.engine.checkpoint.names import (
    best_file_name,
    best_step,
)
from hookline.engine.metric_names import strip_val_prefix
from hookline.engine.metric_values import is_scalar, plain_value

from ._rules import infer_rule, is_better

if TYPE_CHECKING:  # pragma: no cover
    from hookline.engine.runner import Runner


class BestCheckpoint:
    """Tracks the best value of one validation metric and keeps its checkpoint.

    Shared by :class:`CheckpointHook` and :class:`~hookline.hooks.EvalHook`.
    ``save_best`` is a metric name or ``"auto"`` (the first metric the user
    named, else the first validation result; and when the first validation
    reports nothing under the named one, the first it reports other than the
    loss, as in MMEngine); ``rule`` is ``"greater"`` or
    ``"less"`` and is inferred from the name when None. A name whose rule
    cannot be inferred is a :class:`ConfigError` here, at construction, or
    (for ``"auto"``) before training starts when the metric names are known.

    The file is ``best_<metric>_epoch_N.pth`` after a whole epoch of an
    epoch-based run and ``best_<metric>_iter_N.pth`` otherwise, also when the
    owning hook counts iterations (``by_epoch=False``, as MMEngine names it);
    ``filename_tmpl`` does not apply to it (``hookline test best`` and the
    deletion checks know the best files by these two forms). As MMEngine's
    CheckpointHook, each new best sets ``runner.message_hub``'s run
    information ``best_score`` and ``best_ckpt`` (the file's path); a resumed
    run sets them again when training starts.

    Example::

        >>> from hookline.hooks.checkpoint import BestCheckpoint
        >>> best = BestCheckpoint("val/mIoU")
        >>> best.rule, best.filename("val/mIoU", "epoch_3")
        ('greater', 'best_val_mIoU_epoch_3.pth')
    """

    def __init__(self, save_best: str, rule: str | None = None, owner: str = "CheckpointHook",
                 by_epoch: bool | None = None) -> None:
        if not isinstance(save_best, str) or not save_best:
            raise ConfigError(f"{owner} save_best must be a metric name or 'auto', got {save_best!r}")
        if rule is not None:
            infer_rule("", rule)  # validates the spelling
        self.owner = owner
        self.key: str | None = None if save_best == "auto" else save_best
        self._auto = save_best == "auto"
        self._rule_arg = rule
        self.rule: str | None = infer_rule(self.key, rule) if self.key is not None else rule
        self.best_score: float | None = None
        self.best_ckpt: str | None = None
        self._previous: str | None = None  # the best file to delete once the new one is written
        self._orphan: str | None = None  # that deletion, due when the run was interrupted
        #: file names a loaded state held that are not this object's own (ignored; see tidy)
        self.dropped: list[str] = []
        #: whether the owning hook counts epochs (False: the file says ``iter_N``); None:
        #: read the ``by_epoch`` of the hook that holds this object as its ``best``
        self.by_epoch = by_epoch
        self._warned_empty = False  # a validation that reported nothing: said once

    @staticmethod
    def filename(key: str, step: str) -> str:
        return best_file_name(key, step)

    def resolve(self, names: list[str]) -> None:
        """Fix the metric of ``"auto"`` from the metric names known before training."""
        if self.key is None and names:
            self._set_key(names[0])

    def _set_key(self, key: str) -> None:
        self.key = key
        self.rule = infer_rule(key, self._rule_arg)

    def update(self, runner: Runner, metrics: dict[str, Any], folder: Path, *,
               save_optimizer: bool = True) -> bool:
        """Save a best checkpoint when ``metrics`` beat the best so far; True if saved."""
        if not self.check(runner, metrics):
            return False
        self.write(runner, folder, save_optimizer=save_optimizer)
        return True

    def check(self, runner: Runner, metrics: dict[str, Any]) -> bool:
        """Record ``metrics``; True when they beat the best so far (then call :meth:`write`)."""
        if not metrics:
            self._warn_empty(runner)
            return False
        scalars = [k for k, v in metrics.items() if is_scalar(plain_value(v))]
        if self.key is None:
            self._set_key(self._first_scalar(scalars, metrics))
        elif self._auto and self.best_score is None and self.key not in metrics:
            # "auto" guessed from the names the run was given, and a metric reports under
            # other names (MMEngine's Accuracy named "acc" reports "accuracy"): take the
            # first it reports, as MMEngine does, before anything was recorded under the guess
            self._set_key(next((k for k in scalars if k != "loss"),
                               self._first_scalar(scalars, metrics)))
        key = self.key
        assert key is not None  # set just above
        found = strip_val_prefix(key, metrics)  # "val_loss": Lightning's name of "loss"
        if found not in metrics:
            close = closest_names(found, list(metrics), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{self.owner} save_best={key!r} is not among the validation "
                              f"metrics {sorted(metrics)}{hint}")
        value = plain_value(metrics[found])
        if not is_scalar(value):
            raise ConfigError(
                f"{self.owner} save_best={key!r}: the validation reports {key!r} as "
                f"{type(value).__name__} {ConfigError.brief(value)}, not one number; save_best "
                f"tracks a metric that is one number (this validation's: "
                f"{', '.join(scalars) or 'none'})")
        value = float(value)
        rule = self.rule
        assert rule is not None  # inferred with the key
        if not is_better(value, self.best_score, rule):
            return False
        self._previous = self.best_ckpt
        epoch, batch, iters = runner.state.resume_point
        by_epoch = runner.by_epoch and self._counts_epochs(runner)
        step = f"epoch_{epoch}" if by_epoch and batch == 0 else f"iter_{iters}"
        self.best_score = value
        self.best_ckpt = self.filename(key, step)
        return True

    def _first_scalar(self, scalars: list[str], metrics: dict[str, Any]) -> str:
        """``save_best="auto"``: the first metric that is one number."""
        if not scalars:
            raise ConfigError(f"{self.owner} save_best='auto': the validation reports no "
                              f"metric that is one number ({', '.join(metrics)}); name one "
                              f"with save_best=")
        return scalars[0]

    def _counts_epochs(self, runner: Runner) -> bool:
        """Whether the best file is named by epoch: :attr:`by_epoch`, else the ``by_epoch``
        of the hook holding this object (CheckpointHook, EvalHook), else True."""
        if self.by_epoch is not None:
            return self.by_epoch
        for hook in getattr(runner, "hooks", ()):
            if getattr(hook, "best", None) is self:
                return bool(getattr(hook, "by_epoch", True))
        return True

    def _warn_empty(self, runner: Runner) -> None:
        if self._warned_empty:
            return
        self._warned_empty = True
        runner.logger.warning("%s save_best=%r: the validation reported no metrics (it "
                              "processed no data?): no best checkpoint from it (said once)",
                              self.owner, self.key or "auto")

    def publish(self, runner: Runner, folder: Path) -> None:
        """MMEngine's run information: ``best_score`` and ``best_ckpt`` (the path of the
        best file) in ``runner.message_hub``, once there is a best."""
        if self.best_score is None or self.best_ckpt is None:
            return
        hub = runner.message_hub
        hub.update_info("best_score", self.best_score)
        hub.update_info("best_ckpt", str(folder / self.best_ckpt))

    def write(self, runner: Runner, folder: Path, *, save_optimizer: bool = True) -> None:
        """Save the checkpoint of the best found by :meth:`check`; delete the previous best."""
        if self.best_ckpt is None:
            raise RuntimeError("BestCheckpoint.write() before check() found a best")
        runner.save_checkpoint(folder / self.best_ckpt, save_optimizer=save_optimizer,
                               background=True)
        runner.logger.info("new best %s %.4f: saved %s", self.key, self.best_score,
                           self.best_ckpt)
        self.publish(runner, folder)
        previous, self._previous = self._previous, None
        if previous and previous != self.best_ckpt and runner.is_main_process:
            runner.remove_checkpoint(folder / previous)

    def state_dict(self) -> dict:
        state = {"key": self.key, "rule": self.rule, "best_score": self.best_score,
                 "best_ckpt": self.best_ckpt}
        if self._previous is not None:  # written with the new best, deleted right after it
            state["previous"] = self._previous
        return state

    def load_state_dict(self, state: dict) -> None:
        self.dropped = []  # a state loaded now replaces any loaded before
        key = state.get("key")
        if not isinstance(key, (str, type(None))) or (self.key is not None
                                                       and key not in (None, self.key)):
            return  # the run tracked another metric before: its best says nothing about this one
        if self.key is None and key is not None:
            self.key = key
            self.rule = self._rule_arg or state.get("rule")
        self.best_score = state.get("best_score")
        self.best_ckpt = self._own(state.get("best_ckpt"))
        self._orphan = self._own(state.get("previous"))

    def _own(self, name: Any) -> str | None:
        """``name`` when it is one of this metric's best-file names; else None (and noted)."""
        if name is None:
            return None
        if self.key is not None and best_step(self.key, name) is not None:
            return str(name)
        self.dropped.append(repr(name))
        return None

    def tidy(self, runner: Runner, folder: Path) -> None:
        """When training starts: warn about ignored file names from the loaded state, delete
        the previous best file that an interrupted run was about to delete, and put the
        best so far (of a resumed run) into the message hub (:meth:`publish`)."""
        self.publish(runner, folder)
        if self.dropped:
            runner.logger.warning(
                "%s: ignored best-checkpoint file names from the checkpoint that are not this "
                "hook's own (a crafted or damaged checkpoint?): %s; those files are never deleted",
                self.owner, ", ".join(self.dropped))
            self.dropped = []
        orphan, self._orphan = self._orphan, None
        if orphan and orphan != self.best_ckpt and runner.is_main_process \
                and (folder / orphan).is_file():
            runner.remove_checkpoint(folder / orphan)
            runner.logger.info("removed %s, a previous best checkpoint an interrupted run was "
                               "about to delete", orphan)
