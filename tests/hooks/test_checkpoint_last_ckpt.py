"""CheckpointHook publishes MMEngine's run information ``last_ckpt`` (the latest periodic
checkpoint's path) in the message hub, where a LOWEST hook reads it as in MMEngine; a resumed
run starts with the checkpoint it resumed from."""

from __future__ import annotations

import pytest
import torch

from hookline import Hook
from hookline.compat.mmengine.hooks import CheckpointHook as MMEngineCheckpointHook
from hookline.hooks import CheckpointHook

from ._toy import assert_equal_states, make_runner, one_thread, snapshot  # noqa: F401


class Reader(Hook):
    """What a downstream hook reads of the hub, as MMEngine's hooks read it."""

    priority = "LOWEST"

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, str | None]] = []

    def _read(self, stage, runner):
        self.seen.append((stage, runner.iter, runner.message_hub.get_info("last_ckpt")))

    def before_train(self, runner):
        self._read("before_train", runner)

    def after_val_epoch(self, runner, metrics=None):
        self._read("after_val_epoch", runner)

    def after_train(self, runner):
        self._read("after_train", runner)


class Crash(Hook):
    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        if runner.iter + 1 == 25:
            raise RuntimeError("power cut")


@pytest.mark.parametrize("hook_class", [CheckpointHook, MMEngineCheckpointHook])
def test_last_ckpt_is_the_latest_periodic_checkpoint_as_in_mmengine(tmp_path, hook_class):
    reader = Reader()
    hook = hook_class(interval=10, by_epoch=False)
    runner = make_runner(tmp_path, max_iters=30, val_interval=10, hooks=[reader],
                         default_hooks={"checkpoint": hook})
    runner.train()
    # the checkpoint due before each validation is named when it is due (MMEngine saved it
    # there); hookline writes it right after that validation
    assert reader.seen == [("before_train", 0, None),
                           ("after_val_epoch", 10, str(tmp_path / "iter_10.pth")),
                           ("after_val_epoch", 20, str(tmp_path / "iter_20.pth")),
                           ("after_val_epoch", 30, str(tmp_path / "iter_30.pth")),
                           ("after_train", 30, str(tmp_path / "iter_30.pth"))]
    assert all((tmp_path / f"iter_{n}.pth").is_file() for n in (10, 20, 30))


def test_last_ckpt_in_an_epoch_run_and_after_an_early_stop(tmp_path):
    reader = Reader()

    class Stop(Hook):
        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            if runner.iter + 1 == 8:
                runner.stop_training = True

    runner = make_runner(tmp_path, max_epochs=3, hooks=[reader, Stop()],
                         default_hooks={"checkpoint": {"type": "CheckpointHook"}})
    runner.train()
    assert reader.seen[1] == ("after_val_epoch", 6, str(tmp_path / "epoch_1.pth"))
    # stopped in epoch 2: the final state is saved as iter_8.pth, and published
    assert reader.seen[-1] == ("after_train", 8, str(tmp_path / "iter_8.pth"))
    assert (tmp_path / "iter_8.pth").is_file()


def test_a_resumed_run_starts_with_the_checkpoint_it_resumed_from(tmp_path):
    reference = make_runner(tmp_path / "ref", max_iters=30, val_interval=10,
                            default_hooks={"checkpoint": CheckpointHook(interval=10,
                                                                        by_epoch=False)})
    reference.train()
    work = tmp_path / "run"
    with pytest.raises(Exception, match="power cut"):
        make_runner(work, max_iters=30, val_interval=10, hooks=[Crash()],
                    default_hooks={"checkpoint": CheckpointHook(interval=10,
                                                                by_epoch=False)}).train()
    reader = Reader()
    resumed = make_runner(work, max_iters=30, val_interval=10, hooks=[reader], resume="auto",
                          default_hooks={"checkpoint": CheckpointHook(interval=10,
                                                                      by_epoch=False)})
    resumed.train()
    assert reader.seen[0] == ("before_train", 20, str(work / "iter_20.pth"))
    assert reader.seen[-1] == ("after_train", 30, str(work / "iter_30.pth"))
    assert_equal_states(snapshot(resumed.model), snapshot(reference.model))
    checkpoint = torch.load(work / "iter_30.pth", weights_only=True)
    assert checkpoint["meta"]["iter"] == 30
