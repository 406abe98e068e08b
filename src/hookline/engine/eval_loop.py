"""The evaluation loops: :class:`ValLoop` and :class:`TestLoop` (MMEngine's names).

Each runs one pass over its dataloader without gradients and computes the
metrics over it; registered in ``LOOPS``. As MMEngine's (``fp16=False``),
they run in full precision whatever the optimizer wrapper trains in;
``fp16=True`` runs the steps under autocast (the ``AmpOptimWrapper``'s
dtype when training uses one, else torch's default for the device: float16
on CUDA, bfloat16 on CPU). The Runner's ``val_loop`` / ``test_loop``
arguments configure them, e.g. ``val_loop={"fp16": True}`` (MMEngine's
``val_cfg``).

Example::

    >>> from hookline.engine.eval_loop import TestLoop, ValLoop
    >>> ValLoop.mode, TestLoop.mode
    ('val', 'test')
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from hookline.core import ConfigError, HookError

from .amp_optim_wrapper import AmpOptimWrapper
from .base_loop import BaseLoop, note_where
from .data import move_to
from .evaluator import Evaluator
from .fast_batches import iter_batches
from .metric_values import is_scalar
from .registries import LOOPS
from .unfinished_stage import UnfinishedStage

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner

__all__ = ["TestLoop", "ValLoop", "build_eval_loop", "eval_loop_config", "record_metrics"]

#: mode -> (its before-iteration stage, its after-iteration stage)
_ITER_STAGES = {mode: (f"before_{mode}_iter", f"after_{mode}_iter") for mode in ("val", "test")}


@LOOPS.register()
class ValLoop(BaseLoop):
    """One pass over ``dataloader`` without gradients; ``metrics`` are computed over it.

    ``run()`` returns the metrics dict (also kept as :attr:`last_metrics` and in
    ``message_hub`` as ``val/<name>`` and ``info["val_metrics"]``).
    """

    mode = "val"

    def __init__(self, runner: Runner, dataloader: Any, metrics: Any = None,
                 fp16: bool = False, *, evaluator: Any = None) -> None:
        super().__init__(runner, dataloader)
        if metrics is None and evaluator is not None:  # MMEngine's keyword (a subclass's)
            metrics = evaluator.named_metrics if isinstance(evaluator, Evaluator) else evaluator
        if metrics is not None and not isinstance(metrics, Mapping):
            raise ConfigError(f"{type(self).__name__}: metrics come from the Runner's metrics= "
                              "(a dict of name -> metric); got an evaluator of "
                              f"{type(metrics).__name__} (MMEngine's evaluator configs are "
                              "not built by hookline: docs/porting.md)")
        if not isinstance(fp16, bool):
            raise ConfigError(f"{type(self).__name__} fp16 must be true or false (true: the "
                              f"steps run under autocast), got {fp16!r}")
        #: run the steps under autocast (MMEngine's ``fp16``); False: full precision
        self.fp16 = fp16
        #: name -> metric callable or torchmetrics metric
        self.metrics = dict(metrics if metrics is not None else self._runner_metrics(runner))
        self.last_metrics: dict[str, Any] = {}
        #: ``runner.iter`` when the latest pass began (None before the first): a hook that
        #: validates a cut epoch itself checks it was not validated there already
        self.ran_at_iter: int | None = None
        #: batches of the latest pass (known after it; for loaders without a length too)
        self.num_batches = 0
        #: what accumulates the current pass (MMEngine's ``val_loop.evaluator``): a hook may
        #: run ``run_iter(i, batch)`` itself and read ``evaluator.evaluate(size)``
        self.evaluator = Evaluator(self.metrics)
        self._warned_empty = False  # the no-data warning: once per loop
        self._unfinished: UnfinishedStage | None = None  # after_val_epoch hooks a failure left

    def _runner_metrics(self, runner: Runner) -> Any:
        """The Runner's metrics for this loop's mode (``metrics``; the test loop's
        ``test_metrics``)."""
        return runner.metrics

    def run(self) -> dict[str, Any]:
        runner, mode = self.runner, self.mode
        call = runner.hooks.call
        model = runner.model
        was_training = model.training
        evaluator = self.evaluator = Evaluator(self.metrics)
        self.ran_at_iter = runner.iter
        call(runner, f"before_{mode}")
        call(runner, f"before_{mode}_epoch")
        model.eval()
        try:
            with torch.no_grad():
                batch_idx = -1
                batches = iter_batches(self.dataloader, enabled=runner.fast_data,
                                       device=runner.device)  # the DataLoader's, maybe faster
                for batch_idx, data_batch in enumerate(batches):
                    self.run_iter(batch_idx, data_batch)  # MMEngine's signature: overridable
                self.num_batches = batch_idx + 1
            metrics = evaluator.compute()
        finally:
            model.train(was_training)
        if evaluator.processed_nothing:
            self._warn_empty(runner)
        if mode == "val":  # a checkpoint an after_val_epoch hook writes repeats it, RNGs aside
            runner.state.compute_val()
        record_metrics(runner, mode, metrics)
        stage = f"after_{mode}_epoch"
        try:
            call(runner, stage, metrics=metrics)
        except HookError as exc:  # the hooks after the one that raised: at train() again
            if runner.train_loop is not None and runner.running == "train":
                self._unfinished = UnfinishedStage.after(
                    exc.hook, runner.hooks.stages[stage], runner.state.resume_point,
                    {"metrics": metrics}, stage)
            raise
        self._end_pass()
        return metrics

    def _end_pass(self) -> None:
        """Every ``after_<mode>_epoch`` hook saw the metrics: the pass is over."""
        runner, mode = self.runner, self.mode
        if mode == "val":  # every hook saw it: a checkpoint from here on does not repeat it
            runner.state.complete_val()  # (CheckpointHook writes its files in after_val)
        runner.hooks.call(runner, f"after_{mode}")

    def finish_stopped(self) -> bool:
        """``train()`` again after a hook raised in this loop's ``after_val_epoch``: the hooks
        after it get the metrics, then ``after_val`` runs, as if it had not raised (True);
        False when there is nothing to finish, or a checkpoint loaded since moved the run
        (then the validation runs again)."""
        unfinished = self._unfinished
        if unfinished is None:
            return False
        runner = self.runner
        if not unfinished.run(runner, runner.state.resume_point):
            self._unfinished = None
            return False
        self._unfinished = None
        self._end_pass()
        return True

    def _warn_empty(self, runner: Runner) -> None:
        """Once per loop: the pass processed no data, so there are no metrics (MMEngine's
        "got empty results" warning)."""
        if self._warned_empty:
            return
        self._warned_empty = True
        named = f" (metrics {', '.join(self.metrics)} were not computed)" if self.metrics else ""
        runner.logger.warning(
            "%s: the %s pass processed no data: %s_dataloader gave no batches, or every step "
            "returned an empty list of data samples; it reports no metrics%s, so nothing that "
            "tracks one (CheckpointHook save_best, EarlyStoppingHook, ReduceLROnPlateau) is "
            "updated by it. (Said once per loop.)", type(self).__name__, self.mode, self.mode,
            named)

    def precision_context(self) -> contextlib.AbstractContextManager[Any]:
        """What each step runs under: nothing (full precision) unless :attr:`fp16`; then the
        training ``AmpOptimWrapper``'s autocast, else torch's for the Runner's device."""
        if not self.fp16:
            return contextlib.nullcontext()
        runner = self.runner
        wrapper = getattr(runner, "optim_wrapper", None)  # None without an optimizer
        if isinstance(wrapper, AmpOptimWrapper):
            return wrapper.autocast()
        return torch.autocast(device_type=runner.device.type)

    def run_iter(self, batch_idx: int, data_batch: Any, evaluator: Evaluator | None = None
                 ) -> None:
        """One batch: hooks, the model's step, the outputs into ``evaluator`` (default:
        :attr:`evaluator`), hooks."""
        runner, mode = self.runner, self.mode
        if evaluator is None:
            evaluator = self.evaluator
        hooks = runner.hooks
        before, after = _ITER_STAGES[mode]
        data_batch = move_to(data_batch, runner.device)
        if hooks.stages[before]:
            hooks.callers[before](runner, batch_idx=batch_idx, data_batch=data_batch)
        try:
            if self.fp16:
                with self.precision_context():
                    outputs = runner.eval_step(data_batch, mode, batch_idx)
            else:
                outputs = runner.eval_step(data_batch, mode, batch_idx)
        except Exception as exc:
            note_where(exc, f"hookline: raised in the {mode} step of batch {batch_idx}")
            raise
        evaluator.process(outputs, data_batch)
        if hooks.stages[after]:
            hooks.callers[after](runner, batch_idx=batch_idx, data_batch=data_batch,
                                 outputs=outputs)


@LOOPS.register()
class TestLoop(ValLoop):
    """:class:`ValLoop` for the test set (``*_test_*`` stages, ``test/<name>`` metrics); its
    metrics are the Runner's ``test_metrics`` (by default its ``metrics``)."""

    mode = "test"

    def _runner_metrics(self, runner: Runner) -> Any:
        return getattr(runner, "test_metrics", runner.metrics)


def build_eval_loop(spec: Any, mode: str, runner: Runner, dataloader: Any) -> ValLoop:
    """The Runner's ``val_loop`` / ``test_loop`` (:func:`eval_loop_config`), built. A loop
    class written for MMEngine whose constructor takes ``evaluator`` (``(runner, dataloader,
    evaluator, fp16=False)``, passed on to ``ValLoop``) gets None: the Runner's metrics."""
    cfg = eval_loop_config(spec, mode)
    kind = cfg["type"]
    target = LOOPS.get(kind) if isinstance(kind, str) else kind
    try:
        takes = inspect.signature(target).parameters
    except (TypeError, ValueError):
        takes = {}  # type: ignore[assignment]
    if "evaluator" in takes and "evaluator" not in cfg and target is not ValLoop \
            and target is not TestLoop:
        cfg["evaluator"] = None
    loop: ValLoop = LOOPS.build(cfg, runner=runner, dataloader=dataloader)
    return loop


def eval_loop_config(spec: Any, mode: str) -> dict[str, Any]:
    """The ``LOOPS`` config of the Runner's ``val_loop`` / ``test_loop`` argument (``mode``
    "val" or "test"): a loop name, or a config whose ``type`` defaults to ``ValLoop`` /
    ``TestLoop`` (so MMEngine's ``val_cfg=dict(fp16=True)`` is ``val_loop={"fp16": True}``).

    Example::

        >>> eval_loop_config({"fp16": True}, "val"), eval_loop_config(None, "test")
        ({'type': 'ValLoop', 'fp16': True}, {'type': 'TestLoop'})
        >>> eval_loop_config(True, "val")
        Traceback (most recent call last):
        ...
        hookline.core.errors.ConfigError: val_loop must be a LOOPS name or a config dict ...
    """
    default = "ValLoop" if mode == "val" else "TestLoop"
    if spec is None:
        return {"type": default}
    if isinstance(spec, str) or (isinstance(spec, type) and issubclass(spec, BaseLoop)):
        return {"type": spec}
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{mode}_loop must be a LOOPS name or a config dict such as "
                          f"{{'type': {default!r}, 'fp16': True}}, got {spec!r}")
    if "metrics" in spec:
        where = "metrics=" if mode == "val" else "test_metrics="
        raise ConfigError(f"{mode}_loop: give the metrics as the Runner's {where}, not in the "
                          "loop config")
    return {"type": default, **spec}


def record_metrics(runner: Runner, mode: str, metrics: dict[str, Any]) -> None:
    """A pass's metrics where hooks read them before its ``after_<mode>_epoch`` stage (what
    MMEngine's RuntimeInfoHook does there): numbers as ``<mode>/<name>`` scalars of the
    message hub, anything else as its run information, the numbers as
    ``info["<mode>_metrics"]``, and the loop's :attr:`ValLoop.last_metrics`. The Runner's
    ``call_hook("after_val_epoch", metrics=...)`` does it too, for a loop of one's own."""
    hub = runner.message_hub
    numbers = metrics  # the metrics themselves when all are numbers (hooks may add to them)
    for name, value in metrics.items():
        if is_scalar(value):
            hub.update(f"{mode}/{name}", value)
        else:  # lists, dicts, strings: run information, as MMEngine's RuntimeInfoHook
            hub.info[f"{mode}/{name}"] = value
            numbers = {k: v for k, v in metrics.items() if is_scalar(v)}
    hub.info[f"{mode}_metrics"] = numbers
    loop = runner.val_loop if mode == "val" else runner.test_loop
    if isinstance(loop, ValLoop):
        loop.last_metrics = metrics
