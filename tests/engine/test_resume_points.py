"""Exact resume from the points between the iterations: the last iteration of the run, the
end of an epoch before its validation, during validation, after training ended; and a
resumed run with nothing left to do. Each run is stopped by a fault at an exact point
(tests/engine/toy.py's FaultAt), resumed, and compared with the run never stopped: weights,
optimizer state, and every validation's metrics."""

from __future__ import annotations

import signal

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import Hook, HookError, Runner, TrainingInterrupted
from hookline.engine.checkpoint import load_checkpoint_file, read_latest

from .test_resume import assert_same_state
from .toy import FaultAt, Net, dataset, final_state, make_runner

# toy: 8 batches per epoch, 4 epochs (32 iterations), validation after every epoch


class Scores(Hook):
    """Every validation's (iteration, metrics)."""

    priority = "LOWEST"

    def __init__(self) -> None:
        self.seen: list[tuple[int, dict]] = []

    def after_val_epoch(self, runner, metrics=None) -> None:
        self.seen.append((runner.iter, dict(metrics)))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    scores = Scores()
    runner = make_runner(tmp_path_factory.mktemp("reference"), hooks=[scores])
    runner.train()
    return final_state(runner), scores.seen


def stop_then_resume(tmp_path, fault, raises, **kwargs):
    """Run with ``fault`` until it raises ``raises``; resume='auto'; the scores of both runs."""
    first_scores, resumed_scores = Scores(), Scores()
    with pytest.raises(raises):
        make_runner(tmp_path, hooks=[fault, first_scores], **kwargs).train()
    resumed = make_runner(tmp_path, hooks=[resumed_scores], resume="auto", **kwargs)
    resumed.train()
    return resumed, first_scores.seen, resumed_scores.seen


def assert_exact(resumed, first, again, reference) -> None:
    state, scores = reference
    assert_same_state(final_state(resumed), state)
    assert first + again == scores  # every validation ran once, with the same metrics


class SaveAtEpochEnd(Hook):
    """MMEngine's CheckpointHook saves in after_train_epoch, before the validation."""

    priority = "LOWEST"

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def after_train_epoch(self, runner) -> None:
        if runner.epoch + 1 == self.epoch:
            runner.save_checkpoint("end_of_epoch.pth")


def test_a_checkpoint_from_after_train_epoch_resumes_with_the_validation_it_preceded(
        tmp_path, reference):
    first_scores, resumed_scores = Scores(), Scores()
    with pytest.raises(HookError, match="fault injected"):
        make_runner(tmp_path, hooks=[SaveAtEpochEnd(2), FaultAt("before_val_epoch", 16, None),
                                     first_scores]).train()
    saved = load_checkpoint_file(tmp_path / "end_of_epoch.pth")
    assert saved["meta"]["val_pending"] and (saved["meta"]["epoch"], saved["meta"]["iter"]) == (2, 16)
    resumed = make_runner(tmp_path, hooks=[resumed_scores],
                          resume=tmp_path / "end_of_epoch.pth")
    resumed.train()
    assert_exact(resumed, first_scores.seen, resumed_scores.seen, reference)
    # the epoch checkpoint due after that validation was written by the resumed run
    assert load_checkpoint_file(tmp_path / "epoch_2.pth")["meta"]["iter"] == 16


def test_sigterm_at_the_end_of_an_epoch_stops_before_its_validation(tmp_path, reference):
    resumed, first, again = stop_then_resume(
        tmp_path, FaultAt("after_train_epoch", 16, signal.SIGTERM), TrainingInterrupted)
    assert load_checkpoint_file(tmp_path / "iter_16.pth")["meta"]["val_pending"]
    assert len(first) == 1  # epoch 1's validation; epoch 2's ran in the resumed run
    assert_exact(resumed, first, again, reference)


def test_sigterm_during_validation_stops_when_it_ends(tmp_path, reference):
    resumed, first, again = stop_then_resume(
        tmp_path, FaultAt("after_val_iter", 24, signal.SIGTERM), TrainingInterrupted)
    assert len(first) == 3  # the validation in flight finished, then the run stopped
    meta = load_checkpoint_file(tmp_path / "iter_24.pth")["meta"]
    assert not meta["val_pending"] and (meta["epoch"], meta["batch"]) == (3, 0)
    assert_exact(resumed, first, again, reference)


def test_a_crash_during_validation_resumes_from_the_epoch_before(tmp_path, reference):
    resumed, first, again = stop_then_resume(
        tmp_path, FaultAt("after_val_iter", 24, None), HookError)
    assert len(first) == 2 and again[0][0] == 24  # epoch 3 trained and validated again
    assert_exact(resumed, first, [*again], reference)


@pytest.mark.parametrize("stage", ["after_train_iter", "before_val", "after_train"])
def test_a_signal_after_the_last_training_iteration_still_stops_with_a_checkpoint(
        tmp_path, reference, stage, caplog):
    resumed, first, again = stop_then_resume(tmp_path, FaultAt(stage, 32, signal.SIGTERM),
                                             TrainingInterrupted)
    meta = load_checkpoint_file(tmp_path / "iter_32.pth")["meta"]
    assert meta["iter"] == 32
    assert_exact(resumed, first, again, reference)
    log = (tmp_path / "log.txt").read_text()
    if stage != "after_train_iter":  # the final validation had run: nothing was left to do
        assert again == []
        assert log.count("nothing left to train") == 1


def test_the_last_iteration_checkpoint_resumes_into_the_epoch_end_and_final_validation(
        tmp_path, reference):
    resumed, first, again = stop_then_resume(
        tmp_path, FaultAt("after_train_iter", 32, None), HookError, checkpoint_every=4)
    assert read_latest(tmp_path).name == "iter_32.pth"
    assert len(again) == 1 and again[0][0] == 32
    assert_exact(resumed, first, again, reference)


def test_a_finished_run_resumed_says_so_once_and_trains_nothing(tmp_path, reference):
    make_runner(tmp_path).train()
    before = sorted(p.name for p in tmp_path.glob("*.pth"))
    scores = Scores()
    again = make_runner(tmp_path, resume="auto", hooks=[scores])
    again.train()
    assert again.iter == 32 and scores.seen == []
    assert_same_state(final_state(again), reference[0])
    assert sorted(p.name for p in tmp_path.glob("*.pth")) == before
    lines = [line for line in (tmp_path / "log.txt").read_text().splitlines()
             if "nothing left to train" in line]
    assert len(lines) == 1
    assert "after epoch 4 (iteration 32): all 4 epochs are done; raise max_epochs" in lines[0]


class StopAfterEpoch(Hook):
    def after_train_epoch(self, runner) -> None:
        if runner.epoch + 1 == 2:
            runner.stop_training = True


def test_a_run_stopped_early_and_resumed_says_why_it_trains_nothing(tmp_path):
    make_runner(tmp_path, hooks=[StopAfterEpoch()]).train()
    again = make_runner(tmp_path, resume="auto")
    again.train()
    assert again.iter == 16
    log = (tmp_path / "log.txt").read_text()
    assert "nothing left to train after epoch 2 (iteration 16): the run had stopped early" in log


def test_the_resume_line_counts_epochs_from_one(tmp_path):
    """After two full epochs a last-batch checkpoint used to say `(epoch 1, iter 16)`."""
    with pytest.raises(HookError):
        make_runner(tmp_path, hooks=[FaultAt("after_train_iter", 16, None)],
                    checkpoint_every=8).train()
    make_runner(tmp_path, resume="auto", max_epochs=2, checkpoint_every=8).train()
    log = (tmp_path / "log.txt").read_text()
    assert "iter_16.pth, continuing after batch 8 of epoch 2 (iteration 16)" in log
    assert "iter 16)" not in log


class SaveAtValIter(Hook):
    """Saves where a validation is due in an iteration-based run, before it runs."""

    priority = "LOWEST"

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if runner.iter + 1 == 16:
            runner.save_checkpoint("before_val.pth")


def test_iteration_based_runs_resume_with_a_pending_validation(tmp_path):
    def run(work_dir, hooks=(), **kwargs):
        scores = Scores()
        runner = make_runner(work_dir, max_iters=24, hooks=[*hooks, scores], **kwargs)
        return runner, scores

    reference, reference_scores = run(tmp_path / "ref")
    reference.train()
    first, first_scores = run(tmp_path / "run", hooks=[SaveAtValIter(),
                                                       FaultAt("before_val", 16, None)])
    with pytest.raises(HookError):
        first.train()
    assert load_checkpoint_file(tmp_path / "run" / "before_val.pth")["meta"]["val_pending"]
    resumed, resumed_scores = run(tmp_path / "run", resume=tmp_path / "run" / "before_val.pth")
    resumed.train()
    assert_same_state(final_state(resumed), final_state(reference))
    assert first_scores.seen + resumed_scores.seen == reference_scores.seen


def test_resume_from_every_point_of_an_accumulating_run_with_ema_is_exact(tmp_path):
    """Seeded draw of stop points across an EMA + accumulation run (iteration checkpoints)."""
    def make(work_dir, hooks=(), **kwargs):
        return make_runner(work_dir, max_epochs=3, checkpoint_every=1,
                           hooks=[{"type": "EMAHook", "decay": 0.9}, *hooks],
                           optim_wrapper={"optimizer": {"type": "Adam", "lr": 0.01},
                                          "accumulative_counts": 3},
                           optimizer=None, **kwargs)

    reference = make(tmp_path / "ref")
    reference.train()
    draw = torch.Generator().manual_seed(11)
    for stop in torch.randint(1, 25, (3,), generator=draw).tolist():
        work_dir = tmp_path / f"stop_{stop}"
        with pytest.raises(HookError):
            make(work_dir, hooks=[FaultAt("after_train_iter", stop, None)]).train()
        resumed = make(work_dir, resume="auto")
        resumed.train()
        assert_same_state(final_state(resumed), final_state(reference))


class EpochPermutation(torch.utils.data.Sampler):
    """A user's deterministic sampler: a permutation seeded by the epoch (``set_epoch``)."""

    def __init__(self, n: int) -> None:
        self.n, self.epoch = n, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        return iter(torch.randperm(self.n, generator=torch.Generator().manual_seed(self.epoch))
                    .tolist())

    def __len__(self) -> int:
        return self.n


class SaveAt(Hook):
    def __init__(self, at: int) -> None:
        self.at = at

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if runner.iter + 1 == self.at:
            runner.save_checkpoint(runner.work_dir / "mid.pth")


@pytest.mark.parametrize("fast_data", [True, False])
def test_a_deterministic_custom_sampler_resumes_mid_epoch_exactly(tmp_path, fast_data):
    """The kept DataLoader draws its base seed from the global RNG when a pass starts; a pass
    restarted at the resume point must not draw it again (dropout masks would shift)."""
    def run(work_dir, hooks=(), resume=None):
        torch.manual_seed(0)
        data = dataset()
        runner = Runner(Net(), optimizer={"type": "Adam", "lr": 0.01},
                        loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=3, work_dir=work_dir,
                        train_dataloader=DataLoader(data, batch_size=8,
                                                    sampler=EpochPermutation(len(data))),
                        hooks=list(hooks), resume=resume, fast_data=fast_data,
                        default_hooks={"logger": None, "progress": None})
        runner.train()
        return runner

    reference = run(tmp_path / "reference")
    run(tmp_path / "first", hooks=[SaveAt(12)])  # epoch 2, its 4th of 8 batches
    resumed = run(tmp_path / "again", resume=tmp_path / "first" / "mid.pth")
    assert resumed.iter == reference.iter == 24
    assert_same_state(final_state(resumed), final_state(reference))
