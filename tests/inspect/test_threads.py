"""HookManager from many threads: registrations and removals racing with forward passes."""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from hookline.inspect import HookManager
from tests.threads import fast_switching  # noqa: F401  (autouse)
from tests.threads import run_threads as shared_run_threads

from .models import hook_state

THREADS = 6
ROUNDS = 60


def run_threads(target, count=THREADS):
    """Run ``target(index)`` in ``count`` threads started together; re-raise the first error."""
    shared_run_threads(target, count)


@pytest.mark.parametrize("attempt", range(2))
def test_register_remove_and_forward_from_many_threads(attempt):
    torch.manual_seed(attempt)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    before = hook_state(model)
    manager = HookManager(model)
    x = torch.randn(2, 4)

    def worker(index):
        me = threading.get_ident()
        for i in range(ROUNDS):
            seen: list[int] = []
            kind, target = (("forward", "0"), ("forward_pre", nn.Linear), ("backward", "2"))[(index + i) % 3]
            note = seen.append
            if kind == "forward":
                handle = manager.register(target, lambda m, a, out, note=note: note(threading.get_ident()))
            elif kind == "forward_pre":
                handle = manager.register(target, lambda m, a, note=note: note(threading.get_ident()),
                                          kind="forward_pre")
            else:
                handle = manager.register(target, lambda m, gi, go, note=note: note(threading.get_ident()),
                                          kind="backward")
            if kind == "backward":
                model(x.requires_grad_()).sum().backward()
            else:
                with torch.no_grad():
                    model(x)
            expected = 2 if kind == "forward_pre" else 1  # two Linears
            assert seen.count(me) == expected, f"{kind} hook lost or doubled"
            handle.remove()
            seen.clear()
            with torch.no_grad():
                model(x)
            assert me not in seen, "a removed hook ran"

    run_threads(worker)
    assert len(manager) == 0
    manager.remove()
    assert hook_state(model) == before
