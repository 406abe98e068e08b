"""What an mmcv 1.x hook receives as ``runner``: the hookline Runner with mmcv's attributes.

mmcv's runner kept per-iteration state on itself (``inner_iter``,
``data_batch``, ``outputs``, ``mode``, ``data_loader``, ``log_buffer``,
``meta``); hookline passes it to MMEngine-style hooks as arguments instead.
An mmcv hook (:class:`hookline.compat.mmcv.runner.Hook`) is therefore called
with a :class:`MmcvRunner`: a view that holds those attributes and forwards
everything else (reads and writes) to the Runner. There is one view per
Runner, so ``runner.log_buffer`` and ``runner.meta`` are shared by all its
mmcv hooks, as in mmcv.

As in mmcv, ``runner.meta`` is saved as the checkpoint's ``meta`` and comes
back when the run is resumed (:mod:`.runner_checkpoints`).

``isinstance(runner, EpochBasedRunner)`` / ``IterBasedRunner`` / ``BaseRunner``
hold for views (and hookline Runners) of epoch- or iteration-based runs.

Example::

    >>> import torch
    >>> from torch.utils.data import DataLoader, TensorDataset
    >>> from hookline import Runner
    >>> from hookline.compat.mmcv.runner import EpochBasedRunner
    >>> from hookline.compat.mmcv.runner.runner_view import runner_view
    >>> data = TensorDataset(torch.randn(8, 2), torch.randint(0, 2, (8,)))
    >>> runner = Runner(torch.nn.Linear(2, 2), optimizer={"type": "SGD", "lr": 0.1},
    ...                 loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1,
    ...                 train_dataloader=DataLoader(data, batch_size=4), default_hooks={})
    >>> view = runner_view(runner)
    >>> view.enter_stage("before_train_iter", {"batch_idx": 1, "data_batch": None})
    >>> view.mode, view.inner_iter, len(view.data_loader), isinstance(view, EpochBasedRunner)
    ('train', 1, 2, True)
    >>> view.current_lr()
    [0.1]
"""

from __future__ import annotations

import contextlib
import difflib
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from hookline.core import ConfigError
from hookline.engine.data import loader_length
from hookline.engine.hook import STAGES
from hookline.engine.runner import Runner

from .log_buffer import LogBuffer
from .runner_checkpoints import MmcvCheckpoints

_VIEWS: weakref.WeakKeyDictionary[Runner, MmcvRunner] = weakref.WeakKeyDictionary()
_OWN = frozenset({"_ref", "mode", "_inner_iter", "data_batch", "_outputs", "log_buffer", "meta",
                  "_fed", "_eval_loader", "_eval_fed", "_loaded_meta"})
#: where the view saves ``runner.meta`` into checkpoints and takes it back
CHECKPOINT_STAGES = ("before_save_checkpoint", "after_load_checkpoint")
#: the stages every mmcv hook is called at for the view (``before_train``: after a resume)
VIEW_STAGES = (*CHECKPOINT_STAGES, "before_train")


def runner_view(runner: Any) -> MmcvRunner:
    """The one :class:`MmcvRunner` of ``runner`` (``runner`` itself if it is one)."""
    if isinstance(runner, MmcvRunner):
        return runner
    view = _VIEWS.get(runner)
    if view is None:
        view = _VIEWS[runner] = MmcvRunner(runner)
    return view


def _batch_size(data_batch: Any) -> int:
    first = data_batch
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if isinstance(first, Mapping) and first:
        first = next(iter(first.values()))
    return int(first.shape[0]) if isinstance(first, torch.Tensor) and first.dim() else 1


class MmcvOutputs(dict[str, Any]):
    """A step's outputs with mmcv's ``log_vars`` (the scalar outputs but ``num_samples``, as
    floats, converted when first read) and ``num_samples``."""

    def __missing__(self, key: str) -> Any:
        if key == "log_vars":
            value = {k: float(v.item()) if isinstance(v, torch.Tensor) else float(v)
                     for k, v in self.items() if _is_scalar(v) and k != "num_samples"}
            self[key] = value
            return value
        raise KeyError(key)


def _is_scalar(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.numel() == 1
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class MmcvRunner(MmcvCheckpoints):
    """The view (see the module docstring)."""

    def __init__(self, runner: Runner) -> None:
        object.__setattr__(self, "_ref", weakref.ref(runner))
        object.__setattr__(self, "mode", "train")
        object.__setattr__(self, "_inner_iter", 0)
        object.__setattr__(self, "data_batch", None)
        object.__setattr__(self, "_outputs", None)
        object.__setattr__(self, "log_buffer", LogBuffer())
        object.__setattr__(self, "meta", {"hook_msgs": {}})
        object.__setattr__(self, "_fed", None)
        object.__setattr__(self, "_eval_loader", None)  # EvalHook's, while it validates
        object.__setattr__(self, "_eval_fed", False)  # its metrics reached the log buffer
        object.__setattr__(self, "_loaded_meta", None)  # a loaded checkpoint's, until resumed

    @property
    def hookline_runner(self) -> Runner:
        """The Runner this view stands for."""
        runner: Runner | None = self._ref()
        if runner is None:
            raise RuntimeError("the Runner of this mmcv view no longer exists")
        return runner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.hookline_runner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _OWN or isinstance(getattr(type(self), name, None), property):
            object.__setattr__(self, name, value)
        else:
            setattr(self.hookline_runner, name, value)

    # -- per-stage state --------------------------------------------------------------------
    def enter_stage(self, stage: str, kwargs: Mapping[str, Any]) -> None:
        """Set ``mode``, ``inner_iter``, ``data_batch`` and ``outputs`` for ``stage`` (and feed
        the log buffer once per iteration, and with the metrics after an evaluation), as mmcv's
        runner and EvalHook had them."""
        runner = self.hookline_runner
        if stage in CHECKPOINT_STAGES:
            self._checkpoint_stage(stage, kwargs["checkpoint"])
            return
        if self._loaded_meta is not None:
            self.settle_meta()
        for mode in ("train", "val", "test"):
            if f"_{mode}_" in stage or stage.endswith(f"_{mode}"):
                object.__setattr__(self, "mode", mode)
                break
        if "batch_idx" in kwargs:
            position = int(kwargs["batch_idx"])
            if self.mode == "train" and not runner.by_epoch:
                length = loader_length(runner.train_dataloader)
                if length is None and runner.train_loop is not None:  # known once a pass ends
                    length = runner.train_loop.epoch_length
                position = runner.iter % length if length else runner.iter
            object.__setattr__(self, "_inner_iter", position)
            object.__setattr__(self, "data_batch", kwargs.get("data_batch"))
        metrics = kwargs.get("metrics")
        if metrics and self._fed != (stage, runner.iter, runner.epoch):
            # mmcv's EvalHook put the evaluation results into the log buffer for the loggers
            object.__setattr__(self, "_fed", (stage, runner.iter, runner.epoch))
            self.feed_metrics(metrics)
        if "outputs" in kwargs:
            outputs = kwargs["outputs"]
            if isinstance(outputs, Mapping):
                outputs = MmcvOutputs(outputs)
                outputs.setdefault("num_samples", _batch_size(self.data_batch))
            object.__setattr__(self, "_outputs", outputs)
            key = (self.mode, runner.iter, self._inner_iter)
            if self._fed != key and isinstance(outputs, Mapping):
                object.__setattr__(self, "_fed", key)
                if "log_vars" in outputs and isinstance(outputs["log_vars"], Mapping):  # mmcv's
                    self.log_buffer.update(dict(outputs["log_vars"]), outputs["num_samples"])
                    return
                scalars = {k: v.detach() if isinstance(v, torch.Tensor) else v
                           for k, v in outputs.items() if _is_scalar(v) and k != "num_samples"}
                if scalars:
                    self.log_buffer.update(scalars, outputs["num_samples"])

    @property
    def outputs(self) -> Any:
        """The current step's outputs (mmcv: ``runner.outputs``), with ``log_vars``."""
        return self._outputs if self._outputs is not None else self.hookline_runner.outputs

    @outputs.setter
    def outputs(self, value: Any) -> None:
        object.__setattr__(self, "_outputs", value)

    @property
    def inner_iter(self) -> int:
        """The batch's index in the current epoch (or validation pass)."""
        return int(self._inner_iter)

    def feed_metrics(self, metrics: Mapping[str, Any], *, unless_fed: bool = False) -> None:
        """An evaluation's results into ``log_buffer.output`` (``ready``), as mmcv's EvalHook
        put them there (``unless_fed``: only if the evaluation's val stages did not)."""
        if unless_fed and self._eval_fed:
            return
        object.__setattr__(self, "_eval_fed", True)
        self.log_buffer.output.update(metrics)
        self.log_buffer.ready = True

    @contextlib.contextmanager
    def evaluating(self, loader: Any) -> Iterator[None]:
        """While EvalHook validates on ``loader``: ``runner.data_loader`` in val mode."""
        object.__setattr__(self, "_eval_loader", loader)
        object.__setattr__(self, "_eval_fed", False)
        try:
            yield
        finally:
            object.__setattr__(self, "_eval_loader", None)

    @property
    def data_loader(self) -> Any:
        """The dataloader of the current mode (EvalHook's own while it validates).

        Assigning one in train mode (mmcv hooks did so in ``before_train_epoch``)
        makes the epoch-based train loop read it from the current epoch on."""
        runner = self.hookline_runner
        if self.mode == "val" and self._eval_loader is not None:
            return self._eval_loader
        loop = {"val": runner.val_loop, "test": runner.test_loop}.get(self.mode, runner.train_loop)
        return loop.dataloader if loop is not None else None

    @data_loader.setter
    def data_loader(self, loader: Any) -> None:
        runner = self.hookline_runner
        if self.mode != "train" or runner.train_loop is None or not runner.by_epoch:
            raise ConfigError(
                f"runner.data_loader = ... works in an epoch-based run's training (in "
                f"before_train_epoch, as mmcv hooks did); here mode is {self.mode!r}"
                f"{'' if runner.by_epoch else ' in an iteration-based run'}: give the loader "
                "to the Runner (train_dataloader=, val_dataloader=) instead")
        runner.train_loop.dataloader = loader

    @property
    def work_dir(self) -> str:
        """mmcv's ``runner.work_dir``: the Runner's ``work_dir`` as a ``str``."""
        return str(self.hookline_runner.work_dir)

    @work_dir.setter
    def work_dir(self, value: Any) -> None:
        self.hookline_runner.work_dir = Path(value)

    # mmcv's private counters, read by published hooks
    @property
    def _max_epochs(self) -> int | None:
        return self.hookline_runner.max_epochs

    @property
    def _max_iters(self) -> int | None:
        return self.hookline_runner.max_iters

    @property
    def _epoch(self) -> int:
        return self.hookline_runner.epoch

    @property
    def _iter(self) -> int:
        return self.hookline_runner.iter

    @property
    def hooks(self) -> list[Any]:
        """The registered hooks in call order (mmcv's list)."""
        return self.hookline_runner.hooks.hooks

    _hooks = hooks

    # -- mmcv's methods ---------------------------------------------------------------------
    def current_lr(self) -> list[float] | dict[str, list[float]]:
        """Learning rates per parameter group (a dict per optimizer when there are several)."""
        return self._current("lr")

    def current_momentum(self) -> list[float] | dict[str, list[float]]:
        """Momentum (or Adam's ``betas[0]``) per parameter group."""
        return self._current("momentum")

    def _current(self, what: str) -> list[float] | dict[str, list[float]]:
        runner = self.hookline_runner
        if runner.optimizer is not None:
            groups = runner.optimizer.param_groups
            if what == "lr":
                return [float(g["lr"]) for g in groups]
            return [float(g["momentum"]) if "momentum" in g else float(g["betas"][0])
                    for g in groups]
        wrapper = runner.optim_wrapper
        if wrapper is None:
            raise RuntimeError(f"current_{what}() needs an optimizer")
        values = wrapper.get_lr() if what == "lr" else wrapper.get_momentum()
        return {name.rsplit(".", 1)[0]: list(v) for name, v in values.items()}

    def call_hook(self, fn_name: str, **kwargs: Any) -> None:
        """mmcv's ``runner.call_hook(fn_name)``: call that stage on every hook; the caller's
        ``mode``, ``inner_iter``, ``data_batch`` and ``outputs`` are as they were after it."""
        if fn_name not in STAGES:
            close = difflib.get_close_matches(str(fn_name), STAGES, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"runner.call_hook({fn_name!r}): no such stage{hint} (mmcv's "
                              "stages: before_run, before_train_epoch, after_train_iter ...)")
        saved = (self.mode, self._inner_iter, self.data_batch, self._outputs)
        try:
            self.hookline_runner.call_hook(fn_name, **kwargs)
        finally:
            for name, value in zip(("mode", "_inner_iter", "data_batch", "_outputs"), saved):
                object.__setattr__(self, name, value)

    def register_hook(self, hook: Any, priority: Any = "NORMAL") -> Any:
        return self.hookline_runner.register_hook(hook, priority)

    def __repr__(self) -> str:
        return f"<mmcv view of {self.hookline_runner!r} mode={self.mode}>"


class _RunnerKind(type):
    """``isinstance`` by what a run counts: views and hookline Runners qualify."""

    by_epoch: bool | None = None

    def __instancecheck__(cls, obj: Any) -> bool:
        if not isinstance(obj, (MmcvRunner, Runner)):
            return type.__instancecheck__(cls, obj)
        return cls.by_epoch is None or bool(obj.by_epoch) == cls.by_epoch


class BaseRunner(metaclass=_RunnerKind):
    """mmcv's runner base class, for ``isinstance`` checks (any hookline run)."""


class EpochBasedRunner(BaseRunner):
    """``isinstance(runner, EpochBasedRunner)``: an epoch-based hookline run."""

    by_epoch = True


class IterBasedRunner(BaseRunner):
    """``isinstance(runner, IterBasedRunner)``: an iteration-based hookline run."""

    by_epoch = False


__all__ = ["CHECKPOINT_STAGES", "VIEW_STAGES", "BaseRunner", "EpochBasedRunner", "IterBasedRunner",
           "MmcvOutputs", "MmcvRunner", "runner_view"]
