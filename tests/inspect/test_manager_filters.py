"""HookManager's filters (every, once, when, prepend) and HookErrors, on every hook kind, and in the tools."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hookline.core import HookError
from hookline.inspect import ActivationStats, GradientMonitor, HookManager, transform_inputs

from .models import MLP, hook_state


@pytest.fixture
def mlp():
    torch.manual_seed(0)
    return MLP((4, 8, 8, 2))   # Linear 0, ReLU 1, Linear 2, ReLU 3, Linear 4


def test_every_counts_calls_per_module(mlp):
    calls = []
    with HookManager(mlp) as hooks:
        hooks.register(nn.Linear, lambda m, a, out: calls.append(hooks.name_of(m)), every=2)
        for _ in range(4):
            mlp(torch.randn(1, 4))
    assert calls == ["0", "2", "4", "0", "2", "4"]


def test_once_runs_once_per_module_and_then_the_handle_is_removed(mlp):
    before = hook_state(mlp)
    calls = []
    with HookManager(mlp) as hooks:
        handle = hooks.register(["0", "2"], lambda m, a, out: calls.append(hooks.name_of(m)), once=True)
        mlp(torch.randn(1, 4))
        assert calls == ["0", "2"] and handle.removed and len(hooks) == 0
        assert hook_state(mlp) == before
        mlp(torch.randn(1, 4))
    assert calls == ["0", "2"]


def test_once_on_part_of_the_modules_keeps_the_handle_until_all_ran():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    with HookManager() as hooks:
        handle = hooks.register([a, b], lambda m, args, out: None, once=True)
        a(torch.ones(1, 2))
        assert not handle.removed
        b(torch.ones(1, 2))
        assert handle.removed


def test_when_receives_the_hook_arguments(mlp):
    big = []
    with HookManager(mlp) as hooks:
        hooks.register("4", lambda m, a, out: big.append(out.shape[0]),
                       when=lambda m, a, out: out.shape[0] > 2)
        mlp(torch.randn(1, 4))
        mlp(torch.randn(3, 4))
    assert big == [3]


def test_a_held_back_hook_does_not_replace_anything(mlp):
    x = torch.randn(2, 4)
    expected = mlp(x)
    with HookManager(mlp) as hooks:
        hooks.register("4", lambda m, a, out: out * 0, every=2)
        first, second = mlp(x), mlp(x)
    assert torch.equal(first, expected) and torch.equal(second, torch.zeros_like(expected))


def test_filters_on_backward_and_tensor_hooks(mlp):
    seen = []
    with HookManager(mlp) as hooks:
        hooks.register("2", lambda m, gi, go: seen.append("backward"), kind="backward", every=2)
        hooks.register("2", lambda m, go: seen.append("pre"), kind="backward_pre", once=True)
        hooks.register("4", lambda g: seen.append("tensor") or g * 0, kind="tensor",
                       when=lambda g: g.dim() == 1)   # the bias only
        for _ in range(2):
            mlp.zero_grad()
            mlp(torch.randn(3, 4)).sum().backward()
    assert sorted(seen) == ["backward", "pre", "tensor", "tensor"]
    assert torch.count_nonzero(mlp[4].bias.grad) == 0 and torch.count_nonzero(mlp[4].weight.grad) > 0


def test_prepend_puts_the_hook_first(mlp):
    order = []
    with HookManager(mlp) as hooks:
        hooks.register("0", lambda m, a, out: order.append("plain"))
        hooks.register("0", lambda m, a, out: order.append("first"), prepend=True)
        mlp(torch.randn(1, 4))
    assert order == ["first", "plain"]


@pytest.mark.parametrize("kind, args, point", [
    ("forward", (), "2.forward"),
    ("forward_pre", (), "2.forward_pre"),
    ("backward", (), "2.backward"),
    ("backward_pre", (), "2.backward_pre"),
    ("tensor", (), "2.weight.tensor"),
    ("post_accumulate_grad", (), "2.weight.post_accumulate_grad"),
])
def test_an_exception_in_a_torch_hook_is_a_hook_error_naming_hook_module_and_kind(mlp, kind, args, point):
    def broken(*hook_args):
        raise ValueError("inside the hook")

    with HookManager(mlp) as hooks:
        hooks.register("2", broken, kind=kind)
        with pytest.raises(HookError) as info:
            mlp(torch.randn(2, 4)).sum().backward()
    err = info.value
    assert err.hook is broken and isinstance(err.__cause__, ValueError)
    assert err.point in (point, point.replace("weight", "bias"))
    assert f"broken failed at {err.point}: ValueError: inside the hook" in str(err)


def test_the_tools_internal_hooks_raise_hook_errors_too(mlp):
    def bad_transform(x):
        raise KeyError("no such channel")

    with transform_inputs(mlp[2], bad_transform), pytest.raises(HookError) as info:
        mlp(torch.randn(1, 4))
    assert info.value.hook is bad_transform and info.value.point == "Linear.forward_pre"

    class Broken(ActivationStats):
        def _recorder(self, name):
            def record(module, args, output):
                raise RuntimeError("bug in the recorder")
            return record

    with Broken(mlp), pytest.raises(HookError, match=r"failed at 1\.forward: RuntimeError: bug"):
        mlp(torch.randn(1, 4))

    class BrokenMonitor(GradientMonitor):
        def _recorder(self, name):
            def record(param):
                raise RuntimeError("bug")
            return record

    with BrokenMonitor(mlp), pytest.raises(HookError, match=r"failed at \d\.(weight|bias)\.post_accum"):
        mlp(torch.randn(1, 4)).sum().backward()
