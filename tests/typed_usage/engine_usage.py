"""Typed user code of the training layer, checked with ``mypy --strict`` by ``make lint``
(it reads torch's types: too slow for the test suite, whose typing test checks core_usage.py).

Never run. As in core_usage.py, each ``# type: ignore[code]`` marks a mistake a
type checker must report (``--strict`` reports an ignore that is no longer needed).
"""

from __future__ import annotations

import torch
from matplotlib.figure import Figure
from torch.utils.data import DataLoader, TensorDataset

import hookline
from hookline import HOOKS, Hook, Runner
from hookline.inspect import FeatureExtractor, ModelSummary, plot_gradient_flow, summary


class StopWhenGood(Hook):  # a class, not Any: --strict refuses to subclass Any
    priority = "LOW"

    def after_val_epoch(self, runner: Runner, metrics: dict[str, float] | None = None) -> None:
        if metrics is not None and metrics["accuracy"] > 0.95:
            runner.stop_training = True


def make_runner(work_dir: str) -> Runner:
    x = torch.randn(64, 8)
    data = TensorDataset(x, (x.sum(1) > 0).long())
    return hookline.Runner(  # the lazy top-level names are typed
        torch.nn.Sequential(torch.nn.Linear(8, 2)), optimizer={"type": "AdamW", "lr": 1e-2},
        loss_fn=torch.nn.CrossEntropyLoss(), train_dataloader=DataLoader(data, batch_size=32),
        metrics={"accuracy": "accuracy"}, max_epochs=1, work_dir=work_dir, hooks=[StopWhenGood()])


def registered() -> bool:
    return "CheckpointHook" in HOOKS


def inspect_model(model: torch.nn.Module) -> tuple[ModelSummary, Figure]:
    with FeatureExtractor(model, ["0"]) as extractor:
        extractor(torch.randn(2, 8))
    return summary(model, input_size=(1, 8)), plot_gradient_flow(model)


Runner(torch.nn.Linear(2, 2), max_epochs="one")  # type: ignore[arg-type]
