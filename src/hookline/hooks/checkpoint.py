"""CheckpointHook: periodic, last, best-by-metric and keep-N checkpoints.

Every file is a full, resumable checkpoint (model, optimizer, schedulers,
AMP scaler, every hook's state, RNG, position in the data), written
atomically with a ``latest`` pointer beside it.

File names come back from checkpoints (the keep-N list, the best file, the
deletions that were due) and are later deleted as ``folder / name``: only
names these hooks make themselves are taken
(:mod:`hookline.engine.checkpoint.names`); anything else is ignored, with a
warning when training starts.

Example::

    >>> from hookline.hooks import CheckpointHook
    >>> hook = CheckpointHook(interval=2, max_keep_ckpts=3, save_best="accuracy")
    >>> hook.best.rule
    'greater'
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError
from hookline.engine.checkpoint import remove_temp_files
from hookline.engine.checkpoint.names import (
    PERIODIC_TEMPLATES,
    NamePattern,
    plain_file_name,
)
from hookline.engine.checks import boolean, positive_int
from hookline.engine.data import loader_length
from hookline.engine.environment import check_writable_folder
from hookline.engine.hook import Hook
from hookline.engine.registries import HOOKS

from ._rules import infer_rule, warn_if_misspelled
from .best_checkpoint import BestCheckpoint

if TYPE_CHECKING:  # pragma: no cover
    from hookline.engine.runner import Runner


def metric_names(runner: Runner) -> list[str]:
    """The metric names a run's validation will report, as far as known before it runs."""
    return list(getattr(runner, "metrics", None) or {})


@HOOKS.register()
class CheckpointHook(Hook):
    """Saves resumable checkpoints (written atomically, with a ``latest`` pointer).

    A periodic checkpoint that the Runner's own validation follows is written
    once, right after that validation, so that it holds what validation changed
    (best score, ReduceLROnPlateau, early-stopping counters) and a run resumed
    from it continues exactly. (Should validation itself crash, that epoch's
    checkpoint is missing and a resume restarts from the one before.)

    Args:
        interval: save every ``interval`` epochs (``by_epoch``) or iterations.
            In an iteration-based run (``max_iters``), ``by_epoch=True`` counts
            passes over the training data (``len(train_dataloader)`` iterations).
        by_epoch: count epochs (files ``epoch_N.pth``) or iterations (``iter_N.pth``).
        save_optimizer: include optimizer, schedulers and scaler (needed to resume).
        out_dir: the files go to ``out_dir/<the work_dir's name>`` (as in MMEngine
            and mmcv: runs with different work dirs never share a folder); by
            default to the run's ``work_dir``.
        max_keep_ckpts: keep only the newest N periodic checkpoints (-1: all);
            the list survives resume, so a resumed run deletes the right files.
            The ``iter_N.pth`` a signal stop writes (SIGTERM, Ctrl-C) is deleted once
            this hook writes a newer periodic checkpoint (or a later stop a newer one);
            with ``max_keep_ckpts=-1`` it is kept.
        save_last: always save at the end of training.
        save_best: a validation metric name, or ``"auto"`` for the first one;
            the best checkpoint (``best_<metric>_epoch_N.pth``) keeps the
            optimizer state, so it is resumable; the best score survives resume.
        rule: ``"greater"`` or ``"less"``; inferred from the name when None
            (acc, top, auc, precision, mAP, mIoU ... -> greater; loss ... -> less;
            otherwise a :class:`ConfigError` at construction).
        filename_tmpl: e.g. ``"ckpt_{}.pth"``; ``{}`` is the epoch or iteration.

    Example::

        >>> hook = CheckpointHook(interval=1, max_keep_ckpts=2, save_best="loss")
        >>> hook.best.rule, hook.state_dict()["kept"]
        ('less', [])
    """

    priority = "VERY_LOW"

    def __init__(self, interval: int = 1, by_epoch: bool = True, save_optimizer: bool = True,
                 out_dir: str | Path | None = None, max_keep_ckpts: int = -1,
                 save_last: bool = True, save_best: str | None = None, rule: str | None = None,
                 filename_tmpl: str | None = None) -> None:
        positive_int(interval, "interval", owner="CheckpointHook")
        for flag, value in (("by_epoch", by_epoch), ("save_optimizer", save_optimizer),
                            ("save_last", save_last)):
            boolean(value, flag, owner="CheckpointHook")
        if not isinstance(max_keep_ckpts, int) or isinstance(max_keep_ckpts, bool) \
                or max_keep_ckpts == 0 or max_keep_ckpts < -1:
            raise ConfigError("CheckpointHook max_keep_ckpts must be -1 (keep all) or an int "
                              f">= 1, got {max_keep_ckpts!r}")
        if filename_tmpl is not None and ("{}" not in filename_tmpl
                                          or plain_file_name(filename_tmpl) is None):
            raise ConfigError("filename_tmpl must be a file name (no folder) with a '{}' "
                              f"placeholder, e.g. 'ckpt_{{}}.pth'; got {filename_tmpl!r}")
        if save_best is None and rule is not None:
            infer_rule("", rule)
        self.interval = interval
        self.by_epoch = by_epoch
        self.save_optimizer = save_optimizer
        #: the folder the files go to: ``out_dir/<work_dir's name>`` once the run starts
        self.out_dir = check_writable_folder(out_dir, "CheckpointHook out_dir") \
            if out_dir is not None else None
        self._out_root = self.out_dir
        self.max_keep_ckpts = max_keep_ckpts
        self.save_last = save_last
        self.save_best = save_best
        self.best = BestCheckpoint(save_best, rule) if save_best is not None else None
        self.filename_tmpl = filename_tmpl
        self._tmpl = filename_tmpl or ("epoch_{}.pth" if by_epoch else "iter_{}.pth")
        self.kept: list[str] = []
        # the names this hook writes: its template, and iter_N.pth (the save when a run stops)
        self._names = [NamePattern(t) for t in dict.fromkeys([*([filename_tmpl] if filename_tmpl
                                                                else []), *PERIODIC_TEMPLATES])
                       if t.count("{}") == 1]
        self._stale: list[str] = []  # files that keep-N deletes once the file being saved is written
        self._orphans: list[str] = []  # such deletions, due when the run was interrupted
        #: the work_dir files a signal stop wrote (``iter_N.pth``), deleted (keep-N) once a
        #: newer checkpoint of this hook is written
        self.interrupted: list[str] = []
        #: file names a loaded state held that are not this hook's own (ignored; see before_train)
        self.dropped: list[str] = []
        self._last_saved_iter: int | None = None
        self._training = False
        self._pending: tuple[str, int] | None = None
        self._best_due = False
        self._epochs = by_epoch  # by epoch in an epoch-based run; set in before_train
        self._period = interval  # iterations between saves when counting iterations

    @property
    def rule(self) -> str | None:
        return self.best.rule if self.best is not None else None

    @property
    def best_score(self) -> float | None:
        return self.best.best_score if self.best is not None else None

    @property
    def best_ckpt(self) -> str | None:
        return self.best.best_ckpt if self.best is not None else None

    # -- state ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        state: dict[str, Any] = {"kept": list(self.kept)}
        if self._stale:  # deleted once this file is written: a resumed run finishes the job
            state["stale"] = list(self._stale)
        if self._pending is not None:  # due after the validation that a resumed run repeats
            state["pending"] = list(self._pending)
        if self.interrupted:  # signal-stop files, deleted once a newer checkpoint is written
            state["interrupted"] = list(self.interrupted)
        if self.best is not None:
            state["best"] = self.best.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.dropped = []  # a state loaded now replaces any loaded before (an undone resume's)
        self.kept = self._own(state.get("kept", []))
        self._orphans = self._own(state.get("stale", []))
        self.interrupted = self._own(state.get("interrupted", []))
        pending = state.get("pending")
        self._pending = None
        if isinstance(pending, (list, tuple)) and len(pending) == 2 \
                and isinstance(pending[1], int) and self._own([pending[0]]):
            self._pending = (pending[0], pending[1])
        if self.best is not None and "best" in state:
            self.best.load_state_dict(state["best"])

    def _own(self, names: Any) -> list[str]:
        """The names in ``names`` that this hook writes; the others are noted in ``dropped``."""
        if not isinstance(names, (list, tuple)):
            self.dropped.append(repr(names))
            return []
        own = []
        for name in names:
            if any(pattern.matches(name) for pattern in self._names):
                own.append(name)
            else:
                self.dropped.append(repr(name))
        return own

    def _tidy(self, runner: Runner) -> None:
        """When training starts: warn about ignored names, finish the deletions an interrupted
        run left undone, and remove the temp files of interrupted writes from ``out_dir``."""
        folder = self._folder(runner)
        if self.dropped:
            runner.logger.warning(
                "CheckpointHook: ignored file names from the checkpoint that are not this hook's "
                "own (a crafted or damaged checkpoint?): %s; those files are never deleted",
                ", ".join(self.dropped))
            self.dropped = []
        if self.best is not None:
            self.best.tidy(runner, folder)
        if self.kept:  # a resumed run: its latest periodic checkpoint, as MMEngine's hub kept it
            self._publish_last(runner, self.kept[-1])
        if not runner.state.val_pending:
            self._pending = None  # its validation ran before the checkpoint was written
        orphans, self._orphans = self._orphans, []
        if not runner.is_main_process:
            return
        keep = {*self.kept, self.best_ckpt, *([self._pending[0]] if self._pending else [])}
        gone = [name for name in orphans if name not in keep and (folder / name).is_file()]
        for name in gone:
            runner.remove_checkpoint(folder / name)
        if gone:
            runner.logger.info("removed %s: over max_keep_ckpts, the deletion an interrupted run "
                               "left undone", ", ".join(gone))
        if self.out_dir is not None and self.out_dir.resolve() != runner.work_dir.resolve():
            removed = remove_temp_files(self.out_dir)
            if removed:
                runner.logger.info("removed %d unfinished checkpoint write(s) an interrupted run "
                                   "left in %s: %s", len(removed), self.out_dir,
                                   ", ".join(p.name for p in removed))

    # -- when to save -------------------------------------------------------------------
    def _folder(self, runner: Runner) -> Path:
        return self.out_dir if self.out_dir is not None else runner.work_dir

    def before_run(self, runner: Runner) -> None:
        self._training = False  # a standalone val() saves no best checkpoint
        if self._out_root is not None:
            self.out_dir = self._out_root / Path(runner.work_dir).name

    def before_train(self, runner: Runner) -> None:
        self._training = True
        self._epochs = self.by_epoch and runner.by_epoch
        length = loader_length(runner.train_dataloader)  # None: no length (IterableDataset)
        self._period = self.interval * (length or 0) if self.by_epoch and not self._epochs \
            else self.interval
        if self._period == 0:  # MMEngine's by_epoch in an iteration-based run: the end only
            runner.logger.info("CheckpointHook: by_epoch counts passes over train_dataloader, "
                               "which has no length: it saves at the end of training only "
                               "(by_epoch=False saves every `interval` iterations)")
        if self.filename_tmpl is None:
            self._tmpl = "epoch_{}.pth" if self._epochs else "iter_{}.pth"
        else:
            self._tmpl = self.filename_tmpl
        self._last_saved_iter = runner.iter  # nothing new to save before an iteration runs
        if self.best is not None and runner.val_dataloader is None and not any(
                any(c.__name__ == "EvalHook" for c in type(h).__mro__) for h in runner.hooks.hooks):
            raise ConfigError(f"CheckpointHook(save_best={self.save_best!r}) keeps the checkpoint "
                              "with the best validation metric, but this run has no validation: "
                              "give val_dataloader= (and metrics=), or drop save_best")
        if self.best is not None:
            self.best.resolve(metric_names(runner))
            if self.save_best != "auto" and self.best.key is not None:
                warn_if_misspelled(runner, self.best.key, "CheckpointHook save_best")
        self._tidy(runner)

    def after_train_epoch(self, runner: Runner) -> None:
        if not self._epochs:
            return
        if self.every_n_epochs(runner, self.interval) or (
                self.save_last and self.is_last_train_epoch(runner)):
            name = self._tmpl.format(runner.epoch + 1)
            self._publish_last(runner, name)
            loop = runner.train_loop
            if loop is not None and loop.val_due_after_epoch(runner.epoch + 1):
                self._pending = (name, runner.iter)  # written after the validation
            else:
                self._save_periodic(runner, name, runner.iter)

    def after_train_iter(self, runner: Runner, batch_idx: int, data_batch: Any = None,
                         outputs: dict | None = None) -> None:
        if self._epochs:
            return
        if self.every_n_train_iters(runner, self._period) or (
                self.save_last and self.is_last_train_iter(runner)):
            name = self._tmpl.format(runner.iter + 1)
            self._publish_last(runner, name)
            loop = runner.train_loop
            if loop is not None and loop.val_due_after_iter(runner.iter + 1):
                self._pending = (name, runner.iter + 1)  # written after the validation
            else:
                self._save_periodic(runner, name, runner.iter + 1)

    def after_val(self, runner: Runner) -> None:
        """Write the checkpoints due at this validation: the periodic one due before it and a
        new best. Both are written after every ``after_val_epoch`` hook, so they hold what
        validation changed (best score, ReduceLROnPlateau, early-stopping counters, RNG)
        and resuming from either continues exactly as the run did."""
        pending, self._pending = self._pending, None
        best_due, self._best_due = self._best_due, False
        if not self._training:
            return
        stale = self._keep(pending[0]) if pending is not None else []
        if best_due and self.best is not None:
            self._stale = stale  # the best file too records what is due for deletion
            try:
                self.best.write(runner, self._folder(runner), save_optimizer=self.save_optimizer)
            finally:
                self._stale = []
        if pending is not None:
            self._write_periodic(runner, *pending, stale)

    def after_train(self, runner: Runner) -> None:
        """Training ended early (``stop_training``): keep its final state too."""
        if self.save_last and self._last_saved_iter != runner.iter and runner.iter > 0:
            self._save_periodic(runner, f"iter_{runner.iter}.pth", runner.iter)

    def _save_periodic(self, runner: Runner, name: str, iteration: int) -> None:
        self._write_periodic(runner, name, iteration, self._keep(name))

    def _keep(self, name: str) -> list[str]:
        """Add ``name`` to the kept files; return the names that fall out of keep-N."""
        if name in self.kept:
            self.kept.remove(name)
        self.kept.append(name)
        stale = []
        if self.max_keep_ckpts > 0:
            while len(self.kept) > self.max_keep_ckpts:
                stale.append(self.kept.pop(0))
        return stale

    def _publish_last(self, runner: Runner, name: str) -> None:
        """MMEngine's run information ``last_ckpt``: the path of the latest periodic
        checkpoint, set as soon as it is due (one due before a validation is written after
        that validation, so that it holds what the validation changed: from its
        ``after_val_epoch`` hooks to its ``after_val`` the path names a file being made)."""
        runner.message_hub.update_info("last_ckpt", str(self._folder(runner) / name))

    def _write_periodic(self, runner: Runner, name: str, iteration: int, stale: list[str]) -> None:
        folder = self._folder(runner)
        self._publish_last(runner, name)
        stale = [old for old in stale if old != self.best_ckpt]
        # disk full: the stale files may go first, while another kept checkpoint stays
        room = [folder / old for old in stale] if len(self.kept) >= 2 else []
        self._stale = stale
        try:
            runner.save_checkpoint(folder / name, save_optimizer=self.save_optimizer,
                                   background=True, make_room=room)
        finally:
            self._stale = []
        self._last_saved_iter = iteration
        if runner.is_main_process:
            for old in stale:
                runner.remove_checkpoint(folder / old)
        self._drop_interrupted(runner, folder / name)

    # -- checkpoints written on a signal (engine/signals.py) ------------------------------
    def note_stop_checkpoint(self, runner: Runner, name: str) -> None:
        """The run is about to save ``work_dir/name`` as it stops on a signal: record it, so
        that the checkpoint (and a run resumed from it) knows to delete it once a newer
        checkpoint supersedes it. Not with keep-all, nor when it is a kept periodic file."""
        if self.max_keep_ckpts < 0:
            return
        if name in self.kept and self._folder(runner).resolve() == runner.work_dir.resolve():
            return  # the periodic file of that iteration, rewritten: keep-N handles it
        if name in self.interrupted:
            self.interrupted.remove(name)
        self.interrupted.append(name)

    def after_stop_checkpoint(self, runner: Runner, name: str) -> None:
        """The signal stop's ``work_dir/name`` is written: the earlier stops' files go."""
        self._drop_interrupted(runner, runner.work_dir / name)

    def _drop_interrupted(self, runner: Runner, written: Path) -> None:
        """Delete the signal-stop files that ``written`` (a newer checkpoint, just saved)
        supersedes; the file just written, a kept periodic file and the best file stay."""
        if not self.interrupted:
            return
        work_dir = runner.work_dir.resolve()
        target = written.resolve()
        same_folder = self._folder(runner).resolve() == work_dir
        protected = {*self.kept, self.best_ckpt} if same_folder else set()
        gone = [name for name in self.interrupted
                if (work_dir / name) != target and name not in protected]
        self.interrupted = [name for name in self.interrupted if (work_dir / name) == target]
        if runner.is_main_process:
            for name in gone:
                if (work_dir / name).is_file():
                    runner.remove_checkpoint(work_dir / name)

    # -- best ---------------------------------------------------------------------------
    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        if self.best is None or not metrics or not self._training:
            return
        self._best_due = self.best.check(runner, metrics) or self._best_due  # written in after_val

    def __repr__(self) -> str:
        return (f"CheckpointHook(interval={self.interval}, by_epoch={self.by_epoch}, "
                f"max_keep_ckpts={self.max_keep_ckpts}, save_best={self.save_best!r})")
