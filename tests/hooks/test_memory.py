"""EmptyCacheHook: dispatched only at the enabled stages; a no-op until CUDA is initialised."""

from __future__ import annotations

import doctest

import pytest
import torch

import hookline.hooks.memory
from hookline import HOOKS
from hookline.hooks import EmptyCacheHook
from hookline.hooks.memory import empty_cuda_cache

from ._toy import make_runner, one_thread  # noqa: F401  (autouse fixture)


def test_docstring_examples():
    assert doctest.testmod(hookline.hooks.memory).failed == 0


@pytest.mark.parametrize("options,stages", [
    ({}, ["after_train_epoch", "after_val_epoch", "after_test_epoch"]),
    ({"before_epoch": True, "after_epoch": False},
     ["before_train_epoch", "before_val_epoch", "before_test_epoch"]),
    ({"after_epoch": False, "after_iter": True},
     ["after_train_iter", "after_val_iter", "after_test_iter"]),
    ({"after_epoch": False}, []),
])
def test_only_enabled_stages_are_dispatched(tmp_path, options, stages):
    hook = HOOKS.build({"type": "EmptyCacheHook", **options})
    assert hook.triggered_stages() == stages
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=1)
    dispatched = [s for s, methods in runner.hooks.stages.items()
                  if any(m.__self__ is hook for m in methods)]
    assert dispatched == stages
    runner.train()  # runs through on CPU
    if not torch.cuda.is_available():
        assert hook.calls == 0


def test_empty_cache_runs_only_when_cuda_is_initialised(monkeypatch):
    emptied: list[int] = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(1))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    assert empty_cuda_cache() is False and emptied == []
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert empty_cuda_cache() is True and emptied == [1]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert empty_cuda_cache() is False and emptied == [1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cached_memory_is_released_after_each_epoch_on_cuda(tmp_path):
    hook = EmptyCacheHook(after_epoch=True)
    runner = make_runner(tmp_path, hooks=[hook], max_epochs=2, device="cuda")
    reserved: list[tuple[int, int]] = []

    def allocate_and_free(r):
        block = torch.empty(64 * 2**20, dtype=torch.uint8, device="cuda")
        del block  # freed, but kept in PyTorch's cache
        reserved.append((torch.cuda.memory_reserved(), -1))

    def record(r):
        reserved[-1] = (reserved[-1][0], torch.cuda.memory_reserved())

    runner.on("after_train_epoch", allocate_and_free, priority="HIGH")
    runner.on("after_train_epoch", record, priority="LOW")
    runner.train()
    assert hook.calls >= 2
    for before, after in reserved:
        assert after <= before - 64 * 2**20
