"""The training, validation and test loops the Runner drives.

Each loop fires MMEngine's stages in MMEngine's order. ``runner.epoch`` is
the number of finished epochs and ``runner.iter`` the number of finished
training iterations; both advance after the ``after_train_*`` hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .data import move_to, set_epoch, skip_batches
from .evaluator import Evaluator

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner


def train_by_epoch(runner: Runner) -> None:
    """``max_epochs`` passes over the training data, validating every ``val_interval`` epochs."""
    loader = runner.train_dataloader
    call = runner.hooks.call
    call(runner, "before_train")
    while runner.epoch < runner.max_epochs and not runner.stop_training:
        start, runner._resume_batch = runner._resume_batch, 0
        set_epoch(loader, runner.epoch)
        if start:
            skip_batches(loader, start)
        call(runner, "before_train_epoch")
        if start < len(loader):
            for batch_idx, batch in enumerate(loader, start):
                train_iter(runner, batch_idx, batch)
                if runner._should_stop():
                    break
        if runner.stop_training and runner._position[1] < len(loader):
            break  # stopped mid-epoch: the epoch did not finish
        runner._position = (runner.epoch + 1, 0, runner.iter)
        call(runner, "after_train_epoch")
        runner.epoch += 1
        if runner.val_dataloader is not None and (
            runner.epoch % runner.val_interval == 0 or runner.epoch == runner.max_epochs
        ):
            validate(runner)
    call(runner, "after_train")


def train_by_iter(runner: Runner) -> None:
    """``max_iters`` iterations, cycling the data; the epoch stages fire once."""
    loader = runner.train_dataloader
    length = len(loader)
    call = runner.hooks.call
    interval = runner.val_interval
    call(runner, "before_train")
    call(runner, "before_train_epoch")
    while runner.iter < runner.max_iters and not runner.stop_training:
        data_pass, start = divmod(runner.iter, length)
        set_epoch(loader, data_pass)
        if start:
            skip_batches(loader, start)
        for batch_idx, batch in enumerate(loader, start):
            train_iter(runner, batch_idx, batch)
            if runner.val_dataloader is not None and (
                runner.iter % interval == 0 or runner.iter == runner.max_iters
            ):
                validate(runner)
            if runner._should_stop() or runner.iter >= runner.max_iters:
                break
    call(runner, "after_train_epoch")
    call(runner, "after_train")


def train_iter(runner: Runner, batch_idx: int, batch) -> None:
    """One training iteration: hooks, step (forward and loss), hooks."""
    hooks = runner.hooks.stages
    call = runner.hooks.call
    batch = move_to(batch, runner.device)
    if hooks["before_train_iter"]:
        call(runner, "before_train_iter", batch_idx=batch_idx, data_batch=batch)
    if runner.autocast is None:
        outputs = runner._step(batch, "train")
    else:
        with runner.autocast():
            outputs = runner._step(batch, "train")
    runner.outputs = outputs
    runner.message_hub.update_many("train", outputs)
    runner._position = (runner.epoch, batch_idx + 1, runner.iter + 1)
    if hooks["after_train_iter"]:
        call(runner, "after_train_iter", batch_idx=batch_idx, data_batch=batch, outputs=outputs)
    runner.iter += 1


def validate(runner: Runner) -> dict[str, float]:
    """Run the validation loop inside training."""
    return evaluate(runner, "val", runner.val_dataloader)


def evaluate(runner: Runner, mode: str, loader) -> dict[str, float]:
    """The ``val`` or ``test`` loop: stages, no-grad steps, metrics over the epoch."""
    call = runner.hooks.call
    model = runner.model
    was_training = model.training
    evaluator = Evaluator(runner.metrics)
    call(runner, f"before_{mode}")
    call(runner, f"before_{mode}_epoch")
    model.eval()
    try:
        with torch.no_grad():
            for batch_idx, batch in enumerate(loader):
                batch = move_to(batch, runner.device)
                call(runner, f"before_{mode}_iter", batch_idx=batch_idx, data_batch=batch)
                if runner.autocast is None:
                    outputs = runner._step(batch, mode)
                else:
                    with runner.autocast():
                        outputs = runner._step(batch, mode)
                evaluator.process(outputs)
                call(runner, f"after_{mode}_iter", batch_idx=batch_idx, data_batch=batch,
                     outputs=outputs)
        metrics = evaluator.compute()
    finally:
        model.train(was_training)
    for name, value in metrics.items():
        runner.message_hub.update(f"{mode}/{name}", value)
    runner.message_hub.info[f"{mode}_metrics"] = metrics
    call(runner, f"after_{mode}_epoch", metrics=metrics)
    call(runner, f"after_{mode}")
    return metrics
