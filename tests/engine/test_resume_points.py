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

from hookline import ConfigError, Hook, HookError, Runner, TrainingInterrupted
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


class SaveInAfterValEpoch(Hook):
    """An MMEngine habit: a NORMAL-priority hook saving in ``after_val_epoch`` (before the
    LOW ParamSchedulerHook, the LOWEST EarlyStoppingHook and CheckpointHook's best check)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def after_val_epoch(self, runner, metrics=None) -> None:
        if runner.epoch == self.epoch:
            runner.save_checkpoint("in_after_val_epoch.pth")


class DrawInValidation(Hook):
    """Validation that draws from torch's RNG (test-time augmentation, a sampling model)."""

    def after_val_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        torch.rand(3)


def plateau_runner(work_dir, hooks=(), **kwargs) -> Runner:
    """4 epochs; ReduceLROnPlateau cuts the rate after most validations."""
    torch.manual_seed(0)
    return Runner(Net(), optimizer={"type": "SGD", "lr": 0.1, "momentum": 0.9},
                  param_scheduler={"type": "ReduceLROnPlateau", "mode": "min", "factor": 0.5,
                                   "patience": 0, "monitor": "accuracy"},
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(dataset(), batch_size=8, shuffle=True),
                  val_dataloader=DataLoader(dataset(), batch_size=16),
                  metrics={"accuracy": "accuracy"}, max_epochs=4, work_dir=work_dir,
                  hooks=hooks, default_hooks={"logger": None, "progress": None}, **kwargs)


@pytest.mark.parametrize("early_stopping", [False, True])
def test_a_checkpoint_saved_in_after_val_epoch_resumes_with_the_hooks_that_had_not_seen_it(
        tmp_path, early_stopping):
    extra = [{"type": "EarlyStoppingHook", "monitor": "accuracy", "patience": 1,
              "min_delta": 0.5}] if early_stopping else []
    scores = Scores()
    first = plateau_runner(tmp_path / "first",
                           hooks=[SaveInAfterValEpoch(2), scores, DrawInValidation(), *extra])
    first.train()
    path = tmp_path / "first" / "in_after_val_epoch.pth"
    meta = load_checkpoint_file(path)["meta"]
    assert meta["val_pending"] and meta["val_computed"] and meta["iter"] == 16
    again = Scores()
    resumed = plateau_runner(tmp_path / "resumed", hooks=[again, DrawInValidation(), *extra],
                             resume=path)
    resumed.train()
    assert_same_state(final_state(resumed), final_state(first))
    assert again.seen == scores.seen[1:]  # the validation it was saved in, repeated, then on
    assert first.iter == (16 if early_stopping else 32)


def test_a_checkpoint_without_val_computed_in_its_meta_still_resumes(tmp_path):
    first = plateau_runner(tmp_path / "first", hooks=[SaveAtEpochEnd(2)])
    first.train()
    saved = load_checkpoint_file(tmp_path / "first" / "end_of_epoch.pth")
    del saved["meta"]["val_computed"]  # as written before that key existed
    torch.save(saved, tmp_path / "old.pth")
    resumed = plateau_runner(tmp_path / "resumed", resume=tmp_path / "old.pth")
    resumed.train()
    assert_same_state(final_state(resumed), final_state(first))


class SwitchLoader(Hook):
    """YOLOX's habit: from the second epoch on, train on another loader (10 batches, not 8)."""

    def __init__(self, build: bool) -> None:
        self.build = build

    def before_train_epoch(self, runner) -> None:
        if runner.epoch >= 1:
            if self.build:
                loader = runner.build_dataloader({"dataset": dataset(), "batch_size": 6,
                                                  "shuffle": True})
            else:
                loader = DataLoader(dataset(), batch_size=6, shuffle=True)
            runner.train_loop.dataloader = loader


def test_a_checkpoint_past_the_first_loaders_epoch_length_resumes_after_a_loader_switch(
        tmp_path, caplog):
    first = make_runner(tmp_path / "first", hooks=[SwitchLoader(True)], checkpoint_every=1,
                        max_epochs=3)
    first.train()
    path = tmp_path / "first" / "iter_17.pth"  # batch 9 of epoch 2's 10 (the first loader: 8)
    assert load_checkpoint_file(path)["meta"]["batch"] == 9
    resumed = make_runner(tmp_path / "resumed", hooks=[SwitchLoader(True)], resume=path,
                          max_epochs=3)
    resumed.train()
    assert_same_state(final_state(resumed), final_state(first))
    assert "not exact" not in (tmp_path / "resumed" / "log.txt").read_text()


def test_a_switched_plain_dataloader_warns_that_a_mid_epoch_resume_is_not_exact(
        tmp_path, caplog):
    make_runner(tmp_path / "first", hooks=[SwitchLoader(False)], checkpoint_every=1,
                max_epochs=3).train()
    resumed = make_runner(tmp_path / "resumed", hooks=[SwitchLoader(False)], max_epochs=3,
                          resume=tmp_path / "first" / "iter_17.pth")
    resumed.train()
    log = (tmp_path / "resumed" / "log.txt").read_text()
    assert log.count("runner.build_dataloader(...) to resume it exactly") == 1


def test_a_loader_too_short_for_the_resumed_batch_is_one_config_error(tmp_path):
    make_runner(tmp_path / "first", hooks=[SwitchLoader(True)], checkpoint_every=1,
                max_epochs=3).train()
    resumed = make_runner(tmp_path / "resumed", max_epochs=3,  # no switch this time
                          resume=tmp_path / "first" / "iter_17.pth")
    with pytest.raises(ConfigError, match="stopped after batch 9 of epoch 2, and this epoch's "
                                          "train dataloader has 8 batches"):
        resumed.train()


def test_a_mid_epoch_resume_with_loader_workers_warns_once(tmp_path):
    def run(work_dir, **kwargs):
        torch.manual_seed(0)
        Runner(Net(), optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
               train_dataloader=DataLoader(dataset(), batch_size=20, shuffle=True,
                                           num_workers=1),
               max_epochs=1, work_dir=work_dir, default_hooks={
                   "progress": None, "checkpoint": {"type": "CheckpointHook", "interval": 1,
                                                    "by_epoch": False}}, **kwargs).train()

    run(tmp_path / "first")
    run(tmp_path / "resumed", resume=tmp_path / "first" / "iter_1.pth")
    log = (tmp_path / "resumed" / "log.txt").read_text()
    assert log.count("workers' own random augmentations restart") == 1


def test_signal_checkpoints_go_once_a_newer_checkpoint_supersedes_them(tmp_path, reference):
    keep = {"checkpoint": {"type": "CheckpointHook", "interval": 4, "by_epoch": False,
                           "max_keep_ckpts": 2}}
    clean = make_runner(tmp_path / "clean", default_hooks=keep)
    clean.train()
    expected = sorted(p.name for p in (tmp_path / "clean").glob("*.pth"))
    work = tmp_path / "run"
    with pytest.raises(TrainingInterrupted):
        make_runner(work, default_hooks=keep,
                    hooks=[FaultAt("after_train_iter", 10, signal.SIGTERM)]).train()
    with pytest.raises(TrainingInterrupted):  # preempted again before a periodic save
        make_runner(work, default_hooks=keep, resume="auto",
                    hooks=[FaultAt("after_train_iter", 11, signal.SIGINT)]).train()
    assert not (work / "iter_10.pth").exists() and (work / "iter_11.pth").exists()
    resumed = make_runner(work, default_hooks=keep, resume="auto")
    resumed.train()
    assert sorted(p.name for p in work.glob("*.pth")) == expected  # iter_11.pth went too
    assert_same_state(final_state(resumed), final_state(clean))
