"""The evaluation loops: :class:`ValLoop` and :class:`TestLoop` (MMEngine's names).

Each runs one pass over its dataloader without gradients and computes the
metrics over it; registered in ``LOOPS``.

Example::

    >>> from hookline.engine.eval_loop import TestLoop, ValLoop
    >>> ValLoop.mode, TestLoop.mode
    ('val', 'test')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from .base_loop import BaseLoop, note_where
from .data import move_to
from .evaluator import Evaluator
from .fast_batches import iter_batches
from .registries import LOOPS

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner

__all__ = ["TestLoop", "ValLoop"]

#: mode -> (its before-iteration stage, its after-iteration stage)
_ITER_STAGES = {mode: (f"before_{mode}_iter", f"after_{mode}_iter") for mode in ("val", "test")}


@LOOPS.register()
class ValLoop(BaseLoop):
    """One pass over ``dataloader`` without gradients; ``metrics`` are computed over it.

    ``run()`` returns the metrics dict (also kept as :attr:`last_metrics` and in
    ``message_hub`` as ``val/<name>`` and ``info["val_metrics"]``).
    """

    mode = "val"

    def __init__(self, runner: Runner, dataloader: Any, metrics: Any = None) -> None:
        super().__init__(runner, dataloader)
        #: name -> metric callable or torchmetrics metric
        self.metrics = dict(metrics if metrics is not None else runner.metrics)
        self.last_metrics: dict[str, float] = {}
        #: ``runner.iter`` when the latest pass began (None before the first): a hook that
        #: validates a cut epoch itself checks it was not validated there already
        self.ran_at_iter: int | None = None
        #: batches of the latest pass (known after it; for loaders without a length too)
        self.num_batches = 0
        #: what accumulates the current pass (MMEngine's ``val_loop.evaluator``): a hook may
        #: run ``run_iter(i, batch)`` itself and read ``evaluator.evaluate(size)``
        self.evaluator = Evaluator(self.metrics)

    def run(self) -> dict[str, float]:
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
                    self.run_iter(batch_idx, data_batch, evaluator)
                self.num_batches = batch_idx + 1
            metrics = evaluator.compute()
        finally:
            model.train(was_training)
        if mode == "val":  # a checkpoint an after_val_epoch hook writes repeats it, RNGs aside
            runner.state.compute_val()
        for name, value in metrics.items():
            runner.message_hub.update(f"{mode}/{name}", value)
        runner.message_hub.info[f"{mode}_metrics"] = metrics
        self.last_metrics = metrics
        call(runner, f"after_{mode}_epoch", metrics=metrics)
        if mode == "val":  # every hook saw it: a checkpoint from here on does not repeat it
            runner.state.complete_val()  # (CheckpointHook writes its files in after_val)
        call(runner, f"after_{mode}")
        return metrics

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
    """:class:`ValLoop` for the test set (``*_test_*`` stages, ``test/<name>`` metrics)."""

    mode = "test"
