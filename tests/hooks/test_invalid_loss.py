"""CheckInvalidLossHook on real runs whose data holds a NaN or an Inf."""

from __future__ import annotations

import doctest
import math
from types import SimpleNamespace

import pytest
import torch
from torch.utils.data import TensorDataset

import hookline.hooks.invalid_loss
from hookline import ConfigError, Hook, HookError
from hookline.hooks import CheckInvalidLossHook, InvalidLossError

from ._toy import EVERY_ITER, dataset, make_runner, one_thread  # noqa: F401  (autouse fixture)


def poisoned(index: int, value: float = math.nan) -> TensorDataset:
    """The toy data with ``value`` in the inputs of sample ``index``."""
    x, y = dataset()[:]
    x = x.clone()
    x[index, 0] = value
    return TensorDataset(x, y)


def run_poisoned(tmp_path, hook, index, **kwargs):
    return make_runner(tmp_path, hooks=[hook], shuffle=False, data=poisoned(index), **kwargs)


def test_docstring_examples():
    assert doctest.testmod(hookline.hooks.invalid_loss).failed == 0


def test_a_nan_loss_stops_at_its_iteration_before_the_weights_see_it(tmp_path):
    runner = run_poisoned(tmp_path, CheckInvalidLossHook(), index=20)  # batch 2: iteration 3
    with pytest.raises(HookError, match="CheckInvalidLossHook.* failed at before_update") as info:
        runner.train()
    error = info.value.__cause__
    assert isinstance(error, InvalidLossError)
    assert error.iteration == 3 and math.isnan(error.value)
    assert "loss is nan at iteration 3" in str(error)
    assert runner.iter == 2
    # it watches optim_wrapper.before_update: the NaN loss was never back-propagated
    assert all(torch.isfinite(p).all() for p in runner.model.parameters())


def test_with_an_interval_the_first_bad_iteration_is_reported_at_the_next_read(tmp_path):
    hook = CheckInvalidLossHook(interval=4)
    runner = run_poisoned(tmp_path, hook, index=17)  # batch 2: iteration 3; read at 4
    reads: list[int] = []
    original = hook.check

    def counting_check():
        reads.append(runner.iter + 1)
        original()

    hook.check = counting_check
    with pytest.raises(HookError) as info:
        runner.train()
    error = info.value.__cause__
    assert isinstance(error, InvalidLossError)
    assert error.iteration == 3 and "up to 3 more iterations ran after it" in str(error)
    assert reads == [4] and runner.iter == 3


def test_an_inf_loss_later_in_a_run_is_found_at_the_last_iteration(tmp_path):
    x, _ = dataset()[:]
    targets = x[:, :1].clone()
    targets[44] = math.inf  # the last batch of the epoch: iteration 6 of 6
    hook = CheckInvalidLossHook(interval=100)
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=1, shuffle=False, val=False,
                         model=torch.nn.Linear(6, 1), metrics={}, loss_fn=torch.nn.MSELoss(),
                         data=TensorDataset(x, targets))
    with pytest.raises(HookError) as info:
        runner.train()
    assert info.value.__cause__.iteration == 6 and info.value.__cause__.value == math.inf


def test_no_checkpoint_is_written_after_a_bad_loss(tmp_path):
    # checkpoints every iteration, reads every 5: the save of iteration 3 reads the flag first
    runner = run_poisoned(tmp_path, CheckInvalidLossHook(interval=5), index=20,
                          checkpoint=EVERY_ITER)
    with pytest.raises(HookError, match="before_save_checkpoint") as info:
        runner.train()
    assert info.value.__cause__.iteration == 3
    assert sorted(p.name for p in tmp_path.glob("*.pth")) == ["iter_1.pth", "iter_2.pth"]


def test_stopping_early_still_reads_the_last_iterations(tmp_path):
    class StopAt3(Hook):
        priority = "LOWEST"

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            runner.stop_training = runner.iter + 1 == 3

    runner = make_runner(tmp_path, shuffle=False, max_epochs=2, data=poisoned(20),
                         hooks=[CheckInvalidLossHook(interval=10), StopAt3()])
    with pytest.raises(HookError, match="after_train"):
        runner.train()


def test_finite_runs_finish(tmp_path):
    for interval in (1, 4):
        runner = make_runner(tmp_path / str(interval), hooks=[CheckInvalidLossHook(interval)])
        runner.train()
        assert runner.iter == 18


def test_long_intervals_keep_every_loss_until_the_read():
    hook = CheckInvalidLossHook(interval=1000)
    runner = SimpleNamespace(iter=0, max_iters=10_000)
    for i in range(600):  # past the first buffer of 256 losses, twice
        loss = torch.tensor(math.inf if i in (299, 450) else 1.0 / (i + 1))
        hook.after_train_iter(runner, batch_idx=i, outputs={"loss": loss})
        runner.iter += 1
    with pytest.raises(InvalidLossError) as info:
        hook.check()
    assert info.value.iteration == 300 and info.value.value == math.inf
    hook.check()  # read: nothing left
    hook.after_train_iter(runner, batch_idx=0, outputs={"loss": torch.ones(3)})  # non-scalar
    hook.check()
    hook.after_train_iter(runner, batch_idx=0, outputs={"loss": torch.tensor([1.0, math.nan])})
    with pytest.raises(InvalidLossError, match=f"iteration {runner.iter + 1}"):
        hook.check()


def test_bad_interval_is_a_config_error():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="interval must be an int >= 1"):
            CheckInvalidLossHook(bad)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_no_host_device_sync_between_reads_on_cuda(tmp_path):
    """Between reads the hook only queues device work: in CUDA's sync-debug 'error' mode
    around it (and nothing else), training runs through."""
    check = CheckInvalidLossHook(interval=4)

    class Strict(Hook):
        priority = 20  # just before CheckInvalidLossHook (HIGH = 30)

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            if (runner.iter + 1) % 4 and runner.iter + 1 != runner.max_iters:
                torch.cuda.set_sync_debug_mode("error")

    class Relax(Hook):
        priority = 35  # before OptimizerHook (ABOVE_NORMAL = 40)

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            torch.cuda.set_sync_debug_mode("default")

    runner = make_runner(tmp_path, hooks=[Strict(), check, Relax()], max_iters=10,
                         device="cuda", val=False)
    try:
        runner.train()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert runner.iter == 10
