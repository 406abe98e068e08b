"""HookManager: targets, kinds, torch options, errors, and exact removal."""

import pytest
import torch
from torch import nn

from hookline.core import ConfigError, HookError, HookHandle
from hookline.inspect import HookManager

from .models import SmallResNet, hook_state


@pytest.fixture
def net():
    torch.manual_seed(0)
    return SmallResNet().eval()


def test_glob_pattern_hooks_every_matching_module(net):
    seen = []
    with HookManager(net) as hooks:
        hooks.register("layer*.conv1", lambda m, a, out: seen.append(hooks.name_of(m)))
        net(torch.randn(1, 3, 16, 16))
    assert seen == ["layer1.0.conv1", "layer1.1.conv1", "layer2.0.conv1", "layer2.1.conv1",
                    "layer3.0.conv1", "layer3.1.conv1"]


def test_type_module_name_and_list_targets(net):
    counts = {"bn": 0, "fc": 0, "stem": 0}
    with HookManager(net) as hooks:
        hooks.register(nn.BatchNorm2d, lambda m, a, out: counts.__setitem__("bn", counts["bn"] + 1))
        hooks.register(net.fc, lambda m, a, out: counts.__setitem__("fc", counts["fc"] + 1))
        hooks.register(["conv1", "bn1"], lambda m, a: counts.__setitem__("stem", counts["stem"] + 1),
                       kind="forward_pre")
        net(torch.randn(1, 3, 16, 16))
    assert counts == {"bn": 1 + 6 * 2 + 2, "fc": 1, "stem": 2}


def test_forward_hook_return_replaces_output_and_forward_pre_replaces_input():
    lin = nn.Linear(2, 2)
    with HookManager() as hooks:
        hooks.register(lin, lambda m, args: (args[0] * 0,), kind="forward_pre")
        hooks.register(lin, lambda m, args, out: out - m.bias)
        assert torch.equal(lin(torch.ones(1, 2)), torch.zeros(1, 2))
    assert not torch.equal(lin(torch.ones(1, 2)), torch.zeros(1, 2))


def test_torch_options_pass_through():
    lin = nn.Linear(2, 2)
    order = []
    with HookManager() as hooks:
        hooks.register(lin, lambda m, a, out: order.append("first"))
        hooks.register(lin, lambda m, a, out: order.append("prepended"), prepend=True)
        hooks.register(lin, lambda m, args, kwargs, out: order.append(sorted(kwargs)), with_kwargs=True)
        lin(input=torch.ones(1, 2))
        assert order == ["prepended", "first", ["input"]]

        def broken(m, x):
            raise ValueError("boom")
        ran = []
        hooks.register(lin, broken, kind="forward_pre")
        hooks.register(lin, lambda m, a, out: ran.append(out), always_call=True)
        with pytest.raises(HookError, match="broken failed at Linear.forward_pre: ValueError: boom") as info:
            lin(torch.ones(1, 2))
        assert isinstance(info.value.__cause__, ValueError) and info.value.hook is broken
        assert ran == [None]


def test_backward_and_backward_pre_hooks_fire(net):
    grads = {}
    with HookManager(net) as hooks:
        hooks.register("fc", lambda m, gin, gout: grads.__setitem__("in", gin[0].shape), kind="backward")
        hooks.register("fc", lambda m, gout: grads.__setitem__("out", gout[0].shape), kind="backward_pre")
        net(torch.randn(2, 3, 16, 16)).sum().backward()
    assert grads == {"in": torch.Size([2, 32]), "out": torch.Size([2, 10])}


def test_tensor_hooks_on_a_tensor_and_on_module_parameters(net):
    x = torch.randn(1, 3, 16, 16, requires_grad=True)
    before = hook_state(net, x)
    seen = []
    with HookManager(net) as hooks:
        hooks.register(x, lambda g: g * 0, kind="tensor")
        handle = hooks.register("fc", lambda g: seen.append(g.shape), kind="tensor")
        hooks.register("fc", lambda p: seen.append("acc"), kind="post_accumulate_grad")
        net(x).sum().backward()
        assert torch.count_nonzero(x.grad) == 0
        expected = [torch.Size([10, 32]), torch.Size([10]), "acc", "acc"]
        assert sorted(map(str, seen)) == sorted(map(str, expected))
        handle.remove()
        assert len(hooks) == 2
    assert hook_state(net, x) == before
    # the torch quirk hookline's handles undo: removing a tensor's last hook leaves {} where None was
    assert x._backward_hooks is None and net.fc.weight._post_accumulate_grad_hooks is None  # noqa: SLF001


def test_every_hook_table_is_exactly_restored(net):
    x = torch.randn(2, 3, 16, 16, requires_grad=True)
    existing = net.fc.register_forward_hook(lambda m, a, out: None)  # someone else's hook stays
    before = hook_state(net, x)
    with HookManager(net) as hooks:
        hooks.register(nn.Module, lambda m, a, o: None, prepend=True)
        hooks.register(nn.Module, lambda m, a: None, kind="forward_pre", prepend=True)
        # backward hooks on every module, in-place ReLUs included
        hooks.register(nn.Module, lambda m, gi, go: None, kind="backward", prepend=True)
        hooks.register(nn.Module, lambda m, go: None, kind="backward_pre")
        hooks.register(nn.Conv2d, lambda m, a, k, o: None, with_kwargs=True, always_call=True)
        hooks.register(nn.Linear, lambda m, a, k: None, kind="forward_pre", with_kwargs=True)
        hooks.register(nn.Module, lambda g: None, kind="tensor")
        hooks.register(x, lambda g: None, kind="tensor")
        net(x).sum().backward()
        assert hook_state(net, x) != before
    assert hook_state(net, x) == before
    assert net.conv1._is_full_backward_hook is None  # noqa: SLF001 - torch's full-hook flag untouched
    existing.remove()


def test_handle_is_a_hookline_handle_and_removal_is_idempotent():
    lin = nn.Linear(2, 2)
    before = hook_state(lin)
    hooks = HookManager()
    handle = hooks.register(lin, lambda m, a, o: None)
    assert isinstance(handle, HookHandle) and "forward" in handle.point
    handle.remove()
    handle.remove()
    hooks.remove()
    assert hook_state(lin) == before and len(hooks) == 0


def test_pattern_matching_nothing_suggests_close_names(net):
    hooks = HookManager(net)
    with pytest.raises(ConfigError, match=r"'layer1\.0\.conv1'"):
        hooks.register("layer1.0.conv", lambda m, a, o: None)
    with pytest.raises(ConfigError, match="unknown module name or pattern 'nope.*'"):
        hooks.register("nope.*", lambda m, a, o: None)
    with pytest.raises(ConfigError, match="LSTM.*accepted: .*Conv2d"):
        hooks.register(nn.LSTM, lambda m, a, o: None)
    assert len(hooks) == 0


def test_bad_kinds_options_and_targets_are_config_errors(net):
    before = hook_state(net)
    hooks = HookManager(net)
    with pytest.raises(ConfigError, match="did you mean 'forward'"):
        hooks.register("fc", print, kind="forwrd")
    with pytest.raises(ConfigError, match="always_call.*accepted: every, once, prepend, when, with_kwargs"):
        hooks.register("fc", print, kind="forward_pre", always_call=True)
    with pytest.raises(ConfigError, match="'tensor' cannot prepend"):
        hooks.register("fc", print, kind="tensor", prepend=True)
    with pytest.raises(ConfigError, match="did you mean 'every'"):
        hooks.register("fc", print, evry=2)
    with pytest.raises(ConfigError, match="every must be an int >= 1"):
        hooks.register("fc", print, every=0)
    with pytest.raises(ConfigError, match="needs a module target"):
        hooks.register(torch.ones(2, requires_grad=True), print)
    with pytest.raises(ConfigError, match="does not require grad"):
        hooks.register(torch.ones(2), print, kind="tensor")
    with pytest.raises(ConfigError, match="needs a model"):
        HookManager().register("fc", print)
    with pytest.raises(ConfigError, match="must be callable"):
        hooks.register("fc", 3)
    assert hook_state(net) == before
