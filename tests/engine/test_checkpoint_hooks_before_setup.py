"""What the Lightning bridge needs from the engine when a checkpoint is loaded: ``runner.running``
names the run a checkpoint is loaded at the start of (so setup can come before the restore, as
in Lightning); a hook whose state cannot be read before that is no obstacle to applying a
checkpoint; a scheduler's ``"name"`` from ``configure_optimizers()`` is kept."""

from __future__ import annotations

import pytest
import torch

from hookline import Hook
from hookline.core import ConfigError
from hookline.engine.configure_optimizers import optimization_from_model, scheduler_name

from .toy import make_runner


class MadeLate(Hook):
    """Creates its state at before_train; records what the run is when a checkpoint loads."""

    def __init__(self) -> None:
        self.running: list = []

    def before_train(self, runner) -> None:
        if not hasattr(self, "count"):
            self.count = 0

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        self.count += 1

    def after_load_checkpoint(self, runner, checkpoint) -> None:
        self.running.append(runner.running)

    def state_dict(self) -> dict:
        return {"count": self.count}  # AttributeError before before_train

    def load_state_dict(self, state: dict) -> None:
        self.count = state["count"]


def test_a_hook_whose_state_cannot_be_read_yet_is_resumed(tmp_path):
    make_runner(tmp_path, max_epochs=1, hooks=[MadeLate()], checkpoint_every=4).train()
    hook = MadeLate()
    runner = make_runner(tmp_path, max_epochs=2, hooks=[hook], resume="auto")
    assert runner.running is None
    runner.train()
    assert hook.running == ["train"]  # the run a checkpoint loads for, before its first stage
    assert runner.running is None
    assert hook.count == runner.iter  # restored, then counted on


def test_runner_running_names_an_evaluation_run(tmp_path):
    make_runner(tmp_path, max_epochs=1, checkpoint_every=4).train()
    hook = MadeLate()
    make_runner(tmp_path, max_epochs=1, hooks=[hook], resume="auto").val()
    assert hook.running == ["val"]


class Named(torch.nn.Linear):
    def __init__(self, name: object) -> None:
        super().__init__(2, 1)
        self.name = name

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "name": self.name,
                                                         "frequency": 2}}


def test_a_schedulers_name_is_kept_and_must_be_a_str():
    _, schedulers = optimization_from_model(Named("my_lr"))
    assert [scheduler_name(s) for s, _ in schedulers] == ["my_lr"]
    assert scheduler_name(torch.optim.lr_scheduler.StepLR(
        torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1), 1)) is None
    assert "my_lr" not in str(schedulers[0][0].state_dict())  # not in checkpoints
    with pytest.raises(ConfigError, match="'name' must be a str"):
        optimization_from_model(Named(3))
