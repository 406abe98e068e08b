"""Crafted checkpoint files: flipped bytes (the checksum), checkpoints that load but do not fit
the run (another model, shapes, meta, RNG, optimizer groups, schedulers, hook state). Each is
one CheckpointError naming the file and what is wrong, nothing of the run is changed, and
resume='auto' falls back to the next older good checkpoint; with none left it refuses to
start afresh over them."""

from __future__ import annotations

import logging
import random
import shutil
from pathlib import Path

import pytest
import torch

from hookline import Hook
from hookline.engine.checkpoint import (
    CheckpointError,
    NoResumableCheckpointError,
    load_checkpoint_file,
    read_latest,
    verify_file,
    write_latest,
)
from hookline.engine.rng import get_rng_state

from .test_resume import assert_same_state
from .toy import Net, final_state, make_runner


class Counter(Hook):
    """A hook with state whose load_state_dict refuses a malformed one."""

    def __init__(self) -> None:
        self.count = 0

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        self.count += 1

    def state_dict(self) -> dict:
        return {"count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.count = int(state["count"])


def make(work_dir, **kwargs):
    return make_runner(work_dir, hooks=[Counter()], **kwargs)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, dict]:
    """A run's work dir after 2 epochs (epoch_1.pth, epoch_2.pth) and the 4-epoch reference."""
    work_dir = tmp_path_factory.mktemp("two_epochs")
    make(work_dir, max_epochs=2).train()
    reference = make(tmp_path_factory.mktemp("reference"))
    reference.train()
    return work_dir, final_state(reference)


def copy_run(trained, tmp_path) -> Path:
    work_dir = tmp_path / "run"
    shutil.copytree(trained[0], work_dir)
    return work_dir


def snapshot(runner) -> dict:
    return {"model": {k: v.clone() for k, v in runner.model.state_dict().items()},
            "optimizer": runner.optimizer.state_dict(),
            "schedulers": [s.state_dict() for s in runner.param_schedulers],
            "rng": torch.get_rng_state(), "python_rng": get_rng_state()["python"]["internal"],
            "counter": next(h for h in runner.hooks.hooks if isinstance(h, Counter)).count,
            "position": runner.state.resume_point,
            "grads": [p.grad for p in runner.model.parameters()]}


def assert_unchanged(before: dict, after: dict) -> None:
    for key, value in before["model"].items():
        assert torch.equal(value, after["model"][key]), key
    assert before["optimizer"] == after["optimizer"]
    assert before["schedulers"] == after["schedulers"]
    assert torch.equal(before["rng"], after["rng"])
    assert torch.equal(before["python_rng"], after["python_rng"])
    assert before["counter"] == after["counter"] and before["position"] == after["position"]
    assert before["grads"] == after["grads"]


# --------------------------------------------------------------------------- bit rot


def test_every_checkpoint_hookline_writes_carries_a_checksum(trained):
    for path in sorted(trained[0].glob("*.pth")):
        assert verify_file(path) is True


@pytest.mark.parametrize("seed", range(3))
def test_a_flipped_byte_anywhere_is_a_checkpoint_error_naming_the_file(trained, tmp_path, seed):
    data = (trained[0] / "epoch_2.pth").read_bytes()
    draw = random.Random(seed)
    path = tmp_path / "epoch_2.pth"
    for position in [*draw.sample(range(len(data)), 12), len(data) - 1, len(data) // 2]:
        flipped = bytearray(data)
        flipped[position] ^= 1 << draw.randrange(8)
        path.write_bytes(bytes(flipped))
        with pytest.raises(CheckpointError) as info:
            load_checkpoint_file(path)
        assert info.value.path == path, position


def test_resume_auto_falls_back_from_a_damaged_newest_checkpoint(trained, tmp_path, caplog):
    work_dir = copy_run(trained, tmp_path)
    newest = work_dir / "epoch_2.pth"
    data = bytearray(newest.read_bytes())
    data[len(data) // 3] ^= 0x10  # in the tensor data: torch.load alone would not notice
    newest.write_bytes(bytes(data))
    runner = make(work_dir, resume="auto")
    with caplog.at_level(logging.WARNING):
        runner.train()
    log = (work_dir / "log.txt").read_text()
    assert "epoch_2.pth" in log and "checksum does not match" in log
    assert "resumed from" in log and "epoch_1.pth" in log
    assert_same_state(final_state(runner), trained[1])


def test_checkpoints_without_a_checksum_still_load_and_resume(trained, tmp_path):
    """Written by an earlier hookline, or loaded and re-saved with torch.save."""
    work_dir = copy_run(trained, tmp_path)
    path = work_dir / "epoch_2.pth"
    torch.save(torch.load(path, weights_only=True), path)
    assert verify_file(path) is False
    runner = make(work_dir, resume="auto")
    runner.train()
    assert_same_state(final_state(runner), trained[1])


# --------------------------------------------------------------------------- does not fit


def _other_model(ckpt):
    ckpt["state_dict"] = torch.nn.Linear(6, 3).state_dict()


def _wrong_shape(ckpt):
    ckpt["state_dict"]["body.0.weight"] = torch.zeros(16, 7)


def _no_state_dict(ckpt):
    del ckpt["state_dict"]


def _iter_text(ckpt):
    ckpt["meta"]["iter"] = "16"


def _iter_float(ckpt):
    ckpt["meta"]["iter"] = 16.5


def _batch_beyond_epoch(ckpt):
    ckpt["meta"]["batch"] = 9


def _torch_rng(ckpt):
    ckpt["rng"]["torch"] = torch.zeros(3, dtype=torch.uint8)


def _python_rng(ckpt):
    ckpt["rng"]["python"]["internal"] = torch.arange(7)


def _optimizer_groups(ckpt):
    group = ckpt["optimizer"]["param_groups"][0]
    ckpt["optimizer"]["param_groups"] = [{**group, "params": group["params"][:2]},
                                         {**group, "params": group["params"][2:]}]


def _schedulers(ckpt):
    ckpt["param_schedulers"] = []


def _hook_state(ckpt):
    ckpt["hooks"]["Counter"] = {"count": "many"}


def _hooks_list(ckpt):
    ckpt["hooks"] = [1, 2]


MISFITS = [
    (_other_model, "another model: its state_dict lacks 4 of this run's model's weights"),
    (_wrong_shape, "state_dict['body.0.weight'] has shape [16, 7]; this run's model has [16, 6]"),
    (_no_state_dict, "it has no 'state_dict'"),
    (_iter_text, "meta['iter'] is '16', not a count"),
    (_iter_float, "meta['iter'] is 16.5, not a count"),
    (_batch_beyond_epoch, "stopped after batch 9 of an epoch, and this run's epochs have 8"),
    (_torch_rng, "rng: RuntimeError"),
    (_python_rng, "rng: ValueError"),
    (_optimizer_groups, "another optimizer layout: the checkpoint's has 2 parameter groups of 2, 2"),
    (_schedulers, "it holds 0 parameter scheduler state(s); this run has 1"),
    (_hook_state, "the state of hook Counter: ValueError"),
    (_hooks_list, "its 'hooks' is not a dict of hook states"),
]


def craft(work_dir: Path, change, name: str = "crafted.pth") -> Path:
    checkpoint = torch.load(work_dir / "epoch_2.pth", weights_only=True)
    change(checkpoint)
    torch.save(checkpoint, work_dir / name)
    return work_dir / name


@pytest.mark.parametrize(("change", "reason"), MISFITS, ids=[c.__name__ for c, _ in MISFITS])
def test_a_checkpoint_that_does_not_fit_is_one_error_and_changes_nothing(
        trained, tmp_path, change, reason):
    work_dir = copy_run(trained, tmp_path)
    path = craft(work_dir, change)
    runner = make(work_dir, resume=path)
    before = snapshot(runner)
    with pytest.raises(CheckpointError) as info:
        runner.train()
    message = str(info.value)
    assert message.startswith(f"cannot load checkpoint {str(path)!r}: does not fit this run: ")
    assert reason in message and "\n" not in message
    assert_unchanged(before, snapshot(runner))


@pytest.mark.parametrize(("change", "reason"), MISFITS[::2], ids=[c.__name__ for c, _ in MISFITS[::2]])
def test_resume_auto_falls_back_to_the_next_older_checkpoint(trained, tmp_path, change, reason):
    work_dir = copy_run(trained, tmp_path)
    craft(work_dir, change, "epoch_2.pth")
    write_latest(work_dir, "epoch_2.pth")
    runner = make(work_dir, resume="auto")
    runner.train()
    log = (work_dir / "log.txt").read_text()
    assert f"skipping checkpoint {work_dir / 'epoch_2.pth'}: does not fit this run" in log
    assert reason in log
    assert f"resumed from {work_dir / 'epoch_1.pth'}" in log
    assert_same_state(final_state(runner), trained[1])


def test_resume_auto_refuses_to_start_afresh_over_checkpoints_it_cannot_use(trained, tmp_path):
    work_dir = copy_run(trained, tmp_path)
    for name in ("epoch_1.pth", "epoch_2.pth"):
        craft(work_dir, _wrong_shape, name)
    before = {p.name: p.read_bytes() for p in work_dir.iterdir() if p.is_file()}
    runner = make(work_dir, resume="auto")
    with pytest.raises(NoResumableCheckpointError) as info:
        runner.train()
    message = str(info.value)
    assert message.startswith(f"cannot resume from {str(work_dir)!r}: resume='auto' found 2 "
                              "checkpoints and none can be resumed (epoch_")
    assert "nothing was deleted or overwritten" in message and "\n" not in message
    assert runner.iter == 0
    after = {p.name: p.read_bytes() for p in work_dir.iterdir() if p.is_file() and p.name in before}
    assert after == {k: v for k, v in before.items() if k != "log.txt"} | {"log.txt": after["log.txt"]}


def test_resume_auto_starts_fresh_beside_files_that_are_not_hooklines(tmp_path):
    (tmp_path / "pretrained.pth").write_bytes(b"not a checkpoint")
    torch.save(Net().state_dict(), tmp_path / "weights.pth")
    runner = make(tmp_path, resume="auto", max_epochs=1)
    runner.train()
    assert runner.epoch == 1
    assert "starting fresh" in (tmp_path / "log.txt").read_text()


def test_resume_auto_starts_fresh_when_only_a_dangling_latest_pointer_is_left(trained,
                                                                             tmp_path):
    """Every checkpoint deleted to start over, the ``latest`` pointer left behind: nothing of
    the earlier run can be resumed or lost, so it starts fresh and says why."""
    work_dir = copy_run(trained, tmp_path)
    for path in work_dir.glob("*.pth"):
        path.unlink()
    runner = make(work_dir, resume="auto", max_epochs=1)
    runner.train()
    assert runner.epoch == 1 and read_latest(work_dir).name == "epoch_1.pth"
    assert "names epoch_2.pth, which no longer exists, and no other checkpoint is there: " \
           "starting fresh" in (work_dir / "log.txt").read_text()


def test_load_from_another_model_is_an_error_before_training(trained, tmp_path):
    path = craft(copy_run(trained, tmp_path), _other_model)
    with pytest.raises(CheckpointError, match="none of its 2 weights"):
        make(tmp_path / "new", load_from=path).train()


def test_latest_is_untouched_by_a_refused_resume(trained, tmp_path):
    work_dir = copy_run(trained, tmp_path)
    craft(work_dir, _no_state_dict, "epoch_1.pth")
    craft(work_dir, _no_state_dict, "epoch_2.pth")
    with pytest.raises(NoResumableCheckpointError):
        make(work_dir, resume="auto").train()
    assert read_latest(work_dir).name == "epoch_2.pth"
