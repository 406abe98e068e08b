"""``mmengine.hooks.RuntimeInfoHook``: run information into the message hub.

hookline's message hub already reports ``epoch``, ``iter``, ``max_epochs``
and ``max_iters`` live (``message_hub.get_info("iter")``); this hook adds
what MMEngine's also writes: ``cfg``, ``seed``, ``experiment_name``,
``loop_stage``, ``dataset_meta``, ``train/lr`` (per optimizer) and
non-scalar metrics as ``val/<key>`` information (the train loop and the
validation loop already record scalar outputs and metrics as
``train/<key>`` and ``val/<key>``).

Example::

    >>> from hookline.compat.mmengine.hooks import RuntimeInfoHook
    >>> RuntimeInfoHook().priority
    'VERY_HIGH'
"""

from __future__ import annotations

from typing import Any

import torch

from hookline.engine.hook import DATA_BATCH, Hook


def _is_scalar(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.numel() == 1
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class RuntimeInfoHook(Hook):
    """Writes the run's information into ``runner.message_hub`` (see the module docstring)."""

    priority = "VERY_HIGH"

    def __init__(self) -> None:
        self.last_loop_stage: str | None = None

    def before_run(self, runner: Any) -> None:
        runner.message_hub.update_info_dict({
            "cfg": runner.cfg.pretty_text, "seed": runner.seed,
            "experiment_name": runner.experiment_name})
        self.last_loop_stage = None

    def before_train(self, runner: Any) -> None:
        hub = runner.message_hub
        hub.update_info("loop_stage", "train")
        dataset: Any = getattr(runner.train_dataloader, "dataset", None)
        if dataset is not None and hasattr(dataset, "metainfo"):
            hub.update_info("dataset_meta", dataset.metainfo)

    def after_train(self, runner: Any) -> None:
        runner.message_hub.pop_info("loop_stage")

    def before_train_iter(self, runner: Any, batch_idx: int, data_batch: DATA_BATCH = None) -> None:
        wrapper = runner.optim_wrapper
        if wrapper is None:
            return
        for name, values in wrapper.get_lr().items():
            runner.message_hub.update_scalar(f"train/{name}", values[0])

    def before_val(self, runner: Any) -> None:
        self.last_loop_stage = runner.message_hub.get_info("loop_stage")
        runner.message_hub.update_info("loop_stage", "val")

    def after_val_epoch(self, runner: Any, metrics: dict[str, float] | None = None) -> None:
        for key, value in (metrics or {}).items():
            if not _is_scalar(value):  # scalars are in the hub already (val/<key>)
                runner.message_hub.update_info(f"val/{key}", value)

    def after_val(self, runner: Any) -> None:
        if self.last_loop_stage == "train":
            runner.message_hub.update_info("loop_stage", "train")
        else:
            runner.message_hub.pop_info("loop_stage")
        self.last_loop_stage = None

    def before_test(self, runner: Any) -> None:
        runner.message_hub.update_info("loop_stage", "test")

    def after_test(self, runner: Any) -> None:
        runner.message_hub.pop_info("loop_stage")


__all__ = ["RuntimeInfoHook"]
