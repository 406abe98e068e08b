"""RunState: the counters hooks read (MMEngine's meaning) against the point a checkpoint
written at that moment resumes from, restoring from a checkpoint, and the stop flag."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.engine import RunState
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)


def test_a_fresh_state_is_at_the_start():
    state = RunState()
    assert state.by_epoch is True and RunState(by_epoch=False).by_epoch is False
    assert (state.epoch, state.iter, state.batch) == (0, 0, 0)
    assert state.resume_point == (0, 0, 0) and state.stop_training is False
    assert state.take_resume_batch() == 0


def test_during_an_iteration_counters_lag_the_resume_point():
    state = RunState()
    state.take_resume_batch()
    state.complete_iter(0)  # the step ran; after_train_iter hooks run now
    assert (state.epoch, state.iter) == (0, 0)  # the 0-based index of the iteration that ran
    assert state.resume_point == (0, 1, 1) and state.batch == 1  # a checkpoint skips it
    state.advance_iter()
    assert state.iter == 1 and state.resume_point == (0, 1, 1)
    state.complete_iter(1)
    assert state.resume_point == (0, 2, 2) and state.iter == 1
    state.advance_iter()
    assert (state.iter, state.batch) == (2, 2)


def test_completing_an_epoch_moves_the_resume_point_to_the_next_epoch():
    state = RunState()
    for batch in range(3):
        state.complete_iter(batch)
        state.advance_iter()
    state.complete_epoch()  # after_train_epoch hooks run now
    assert state.epoch == 0 and state.resume_point == (1, 0, 3)
    state.advance_epoch()
    assert (state.epoch, state.iter, state.batch) == (1, 3, 0)
    state.complete_iter(0)
    assert state.resume_point == (1, 1, 4)


def test_restore_in_an_epoch_run_resumes_inside_the_epoch():
    state = RunState(by_epoch=True)
    state.restore(epoch=2, iteration=20, batch=4)
    assert (state.epoch, state.iter, state.batch) == (2, 20, 4)
    assert state.resume_point == (2, 4, 20) and state.stop_training is False
    assert state.take_resume_batch() == 4
    assert state.take_resume_batch() == 0  # only the first epoch after a resume skips batches
    assert state.batch == 0


def test_restore_in_an_iteration_run_keeps_the_batch_of_the_pass_in_progress():
    # batch: the batches done of the pass over the data in progress, where the train loop
    # starts that pass again (no epoch resumes in the middle: take_resume_batch stays 0)
    state = RunState(by_epoch=False)
    state.restore(epoch=0, iteration=20, batch=4)
    assert (state.epoch, state.iter, state.batch) == (0, 20, 4)
    assert state.resume_point == (0, 4, 20)
    assert state.take_resume_batch() == 0


def test_restore_sets_the_stop_flag_both_ways():
    state = RunState()
    state.restore(epoch=1, iteration=6, stop_training=True)
    assert state.stop_training is True
    state.restore(epoch=1, iteration=6)
    assert state.stop_training is False
    state.stop_training = True
    state.restore(epoch=1, iteration=6, stop_training=False)
    assert state.stop_training is False


@pytest.mark.parametrize(("unit", "field"), [("epoch", "epoch"), ("iter", "iter")])
def test_counting_current_counts_the_ending_unit_only_inside(unit, field):
    state = RunState()
    state.restore(epoch=3, iteration=30)
    with state.counting_current(unit):
        assert getattr(state, field) == (4 if unit == "epoch" else 31)
        other = "iter" if unit == "epoch" else "epoch"
        assert getattr(state, other) == (30 if other == "iter" else 3)
    assert (state.epoch, state.iter) == (3, 30)
    with pytest.raises(KeyError), state.counting_current(unit):
        raise KeyError("even when the evaluation fails")
    assert (state.epoch, state.iter) == (3, 30)


def test_counting_current_refuses_other_units():
    with pytest.raises(ValueError, match="'epoch' or 'iter'"), RunState().counting_current("batch"):
        pass


def test_repr_names_the_position():
    state = RunState(by_epoch=False)
    state.restore(epoch=1, iteration=7)
    text = repr(state)
    assert "by_epoch=False" in text and "iter=7" in text and "resume_point=(1, 0, 7)" in text


def test_hooks_of_a_real_run_see_counters_and_resume_points_as_documented(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(12, 3)
    runner = Runner(torch.nn.Linear(3, 2), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2, work_dir=tmp_path, device="cpu",
                    train_dataloader=DataLoader(TensorDataset(x, (x[:, 0] > 0).long()),
                                                batch_size=4),
                    default_hooks={"logger": None, "progress": None, "checkpoint": None})
    assert runner.state.by_epoch is True
    iters: list[tuple] = []
    epochs: list[tuple] = []
    runner.on("after_train_iter", lambda r, batch_idx, **kw: iters.append(
        (r.epoch, r.iter, batch_idx, r.state.resume_point)))
    runner.on("after_train_epoch", lambda r: epochs.append((r.epoch, r.iter, r.state.resume_point)))
    runner.train()
    assert iters == [(0, 0, 0, (0, 1, 1)), (0, 1, 1, (0, 2, 2)), (0, 2, 2, (0, 3, 3)),
                     (1, 3, 0, (1, 1, 4)), (1, 4, 1, (1, 2, 5)), (1, 5, 2, (1, 3, 6))]
    assert epochs == [(0, 3, (1, 0, 3)), (1, 6, (2, 0, 6))]
    assert (runner.epoch, runner.iter) == (2, 6)
