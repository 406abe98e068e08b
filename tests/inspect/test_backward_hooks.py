"""In-place-safe backward hooks, checked against torch's full backward hooks.

Each test runs a model with in-place ops (``ReLU(inplace=True)``, ``out +=
identity``) through HookManager, and the same model with out-of-place ops
through torch's own ``register_full_backward_hook`` / ``_pre_hook`` (which
fail on the in-place model, pytorch#61519). The hooks must see the same
calls, the same ``grad_input`` / ``grad_output`` tuples, and their
replacements must change the gradients in the same way.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hookline.core import HookError
from hookline.inspect import HookManager

from .models import SmallResNet, hook_state


def twins(seed: int = 0):
    torch.manual_seed(seed)
    inplace = SmallResNet(inplace=True).train()
    outofplace = SmallResNet(inplace=False).train()
    outofplace.load_state_dict(inplace.state_dict())
    return inplace, outofplace


def snapshot(grads):
    return tuple(None if g is None else g.detach().clone() for g in grads)


def assert_same_grads(ours, theirs, label):
    assert len(ours) == len(theirs), label
    for a, b in zip(ours, theirs):
        assert (a is None) == (b is None), label
        if a is not None:
            assert a.shape == b.shape, label
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=label)


def record_with_torch(model):
    calls: dict[str, list] = {}
    handles = []
    for name, module in model.named_modules():
        def hook(m, grad_input, grad_output, name=name):
            calls.setdefault(name, []).append(("full", snapshot(grad_input), snapshot(grad_output)))

        def pre_hook(m, grad_output, name=name):
            calls.setdefault(name, []).append(("pre", snapshot(grad_output)))

        handles.append(module.register_full_backward_pre_hook(pre_hook))
        handles.append(module.register_full_backward_hook(hook))
    return calls, handles


def record_with_hookline(manager):
    calls: dict[str, list] = {}
    names = {m: n for n, m in manager.model.named_modules()}
    manager.register(nn.Module, lambda m, go: calls.setdefault(names[m], []).append(
        ("pre", snapshot(go))), kind="backward_pre")
    manager.register(nn.Module, lambda m, gi, go: calls.setdefault(names[m], []).append(
        ("full", snapshot(gi), snapshot(go))), kind="backward")
    return calls


def compare(ours, theirs):
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert [c[0] for c in ours[name]] == [c[0] for c in theirs[name]], name
        for a, b in zip(ours[name], theirs[name]):
            for i, (x, y) in enumerate(zip(a[1:], b[1:])):
                what = "grad_input" if a[0] == "full" and i == 0 else "grad_output"
                assert_same_grads(x, y, f"{name} {a[0]} {what}")


def test_torch_full_backward_hooks_fail_on_the_in_place_model():
    model, _ = twins()
    handle = model.layer1[0].bn1.register_full_backward_hook(lambda m, gi, go: None)
    with pytest.raises(RuntimeError, match="view and is being modified inplace"):
        model(torch.randn(2, 3, 16, 16))
    handle.remove()


@pytest.mark.parametrize("input_grad", [False, True])
def test_every_module_sees_torch_values_on_a_resnet18_shaped_model(input_grad):
    model, reference = twins()
    x = torch.randn(2, 3, 16, 16)
    theirs, handles = record_with_torch(reference)
    reference(x.clone().requires_grad_(input_grad)).pow(2).sum().backward()
    for handle in handles:
        handle.remove()

    before = hook_state(model)
    with HookManager(model) as manager:
        ours = record_with_hookline(manager)
        model(x.clone().requires_grad_(input_grad)).pow(2).sum().backward()
    assert hook_state(model) == before
    compare(ours, theirs)
    # the parameters get the same gradients as without hooks
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6, msg=name)


def test_returned_grad_input_and_grad_output_replace_them_as_with_torch():
    model, reference = twins(1)
    x = torch.randn(2, 3, 16, 16)

    def halve_input(m, grad_input, grad_output):
        return tuple(None if g is None else g * 0.5 for g in grad_input)

    def triple_output(m, grad_output):
        return tuple(None if g is None else g * 3 for g in grad_output)

    targets = ["layer1.0.bn1", "layer2.0.relu", "layer2.1", "layer3.0.conv2", "relu"]
    handles = []
    for name in targets:
        module = reference.get_submodule(name)
        handles += [module.register_full_backward_hook(halve_input),
                    module.register_full_backward_pre_hook(triple_output)]
    reference(x).sum().backward()
    for handle in handles:
        handle.remove()
    with HookManager(model) as manager:
        manager.register(targets, halve_input, kind="backward")
        manager.register(targets, triple_output, kind="backward_pre")
        model(x).sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6, msg=name)


def test_backward_pre_hooks_alone_see_and_replace_grad_output():
    model, reference = twins(3)
    x = torch.randn(2, 3, 16, 16)
    seen, theirs = [], []
    handle = reference.layer2[1].bn2.register_full_backward_pre_hook(
        lambda m, go: theirs.append(go[0].clone()) or (go[0] * 0,))
    reference(x).sum().backward()
    handle.remove()
    with HookManager(model) as manager:
        manager.register("layer2.1.bn2", lambda m, go: seen.append(go[0].clone()) or (go[0] * 0,),
                         kind="backward_pre")
        model(x).sum().backward()
    torch.testing.assert_close(seen[0], theirs[0])
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6, msg=name)


def test_several_hooks_on_one_module_chain_in_registration_order_and_prepend():
    order = []
    lin = nn.Linear(3, 3)
    with HookManager() as manager:
        manager.register(lin, lambda m, gi, go: order.append("first") or (gi[0] * 2,), kind="backward")
        manager.register(lin, lambda m, gi, go: order.append(("second", float(gi[0].detach().sum()))),
                         kind="backward")
        manager.register(lin, lambda m, gi, go: order.append("prepended"), kind="backward", prepend=True)
        x = torch.ones(1, 3, requires_grad=True)
        lin(x).sum().backward()
    reference = float(lin.weight.sum(0).sum())
    assert order[0] == "prepended" and order[1] == "first"
    assert order[2][0] == "second" and order[2][1] == pytest.approx(2 * reference)
    assert torch.allclose(x.grad, 2 * lin.weight.sum(0, keepdim=True))


def test_a_hooked_in_place_module_keeps_the_caller_tensor_history():
    """``relu(x)`` with the result thrown away: x itself is the output, as without hooks."""
    class SideEffect(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            h = self.lin(x)
            self.act(h)            # relies on the in-place change of h
            return h * 2

    torch.manual_seed(0)
    model = SideEffect()
    x = torch.randn(3, 4)
    model(x).sum().backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    seen = []
    with HookManager(model) as manager:
        manager.register("act", lambda m, gi, go: seen.append((gi[0].clone(), go[0].clone())),
                         kind="backward")
        out = model(x)
        assert torch.equal(out, torch.relu(model.lin(x)) * 2)
        out.sum().backward()
    for got, want in zip(model.parameters(), expected):
        torch.testing.assert_close(got.grad, want)
    (grad_in, grad_out), = seen
    assert torch.equal(grad_out, torch.full((3, 4), 2.0))
    assert torch.equal(grad_in, grad_out * (model.lin(x) > 0))


def test_an_in_place_module_on_a_leaf_that_requires_grad_fails_as_without_hooks():
    relu = nn.ReLU(inplace=True)
    x = torch.randn(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        relu(x)
    with HookManager() as manager:
        manager.register(relu, lambda m, gi, go: None, kind="backward")
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            relu(x)


def test_a_later_in_place_op_on_a_saved_output_is_still_detected():
    """An output that the module saved for backward (Sigmoid's) changed in place: torch's error."""
    sig = nn.Sigmoid()
    x = torch.randn(3, requires_grad=True)
    with HookManager() as manager:
        manager.register(sig, lambda m, gi, go: None, kind="backward")
        y = sig(x)
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_an_output_that_is_the_input_keeps_the_version_checks_of_torch():
    """Identity returns its input: an in-place op on the result must still invalidate what the
    producer of that input saved (Sigmoid saves its output), as without hooks."""
    model = nn.Sequential(nn.Sigmoid(), nn.Identity())
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        model(x).mul_(2).sum().backward()
    with HookManager(model) as manager:
        manager.register("1", lambda m, gi, go: None, kind="backward")
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            model(x).mul_(2).sum().backward()


def test_without_the_version_counter_api_the_aliases_get_their_own_counters(monkeypatch):
    """torch builds without ``_unsafe_set_version_counter``: the fallback gives the same values."""
    from hookline.inspect import _backward  # noqa: PLC0415 - the module whose fallback is tested

    monkeypatch.setattr(_backward, "_set_versions", None)
    test_every_module_sees_torch_values_on_a_resnet18_shaped_model(input_grad=True)
    test_a_hooked_in_place_module_keeps_the_caller_tensor_history()


def test_tuple_outputs_and_inputs_that_do_not_require_grad():
    lstm = nn.LSTM(4, 5, batch_first=True)
    seen = []
    with HookManager() as manager:
        manager.register(lstm, lambda m, gi, go: seen.append((gi, go)), kind="backward")
        out, (h, c) = lstm(torch.randn(2, 3, 4))
        out.sum().backward()
    (grad_input, grad_output), = seen
    assert grad_input == (None,)                      # the input does not require grad
    assert grad_output[0].shape == (2, 3, 5) and grad_output[1] is None  # (h, c) is a nested tuple


def test_hooks_do_not_fire_without_grad_and_no_graph_is_kept():
    lin = nn.Linear(2, 2)
    seen = []
    with HookManager() as manager:
        manager.register(lin, lambda m, gi, go: seen.append(1), kind="backward")
        with torch.no_grad():
            out = lin(torch.ones(1, 2))
        assert out.grad_fn is None and seen == []


def test_an_error_in_a_backward_hook_names_the_hook_module_and_kind():
    model, _ = twins()

    def broken(m, grad_input, grad_output):
        raise ValueError("bad gradient")

    with HookManager(model) as manager:
        manager.register("layer2.0.bn1", broken, kind="backward")
        with pytest.raises(HookError) as info:
            model(torch.randn(2, 3, 16, 16)).sum().backward()
    assert info.value.point == "layer2.0.bn1.backward" and info.value.hook is broken
    assert isinstance(info.value.__cause__, ValueError)
    assert "broken failed at layer2.0.bn1.backward: ValueError: bad gradient" in str(info.value)


def test_a_wrong_number_of_returned_grads_is_torch_error():
    lin = nn.Linear(2, 2)
    with HookManager() as manager:
        manager.register(lin, lambda m, gi, go: (gi[0], gi[0]), kind="backward")
        with pytest.raises(HookError, match="invalid number of grad_input, got 2, but expected 1") as info:
            lin(torch.ones(1, 2, requires_grad=True)).sum().backward()
    assert info.value.point == "Linear.backward"


# -- the seeds' backward-hook uses, on in-place models -------------------------------------------
class SeedCNN(nn.Sequential):
    """The usual tutorial CNN: conv, BN, in-place ReLU, pool, twice, then a classifier."""

    def __init__(self, inplace: bool = True) -> None:
        super().__init__(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=inplace), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=inplace), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(16 * 4 * 4, 10),
        )


def test_the_seeds_gradient_norm_logger_and_clipper_match_torch_on_the_out_of_place_copy():
    """Log ||grad_output|| of every layer and clip grad_input to norm 1: the seeds' two examples."""
    torch.manual_seed(0)
    model, reference = SeedCNN(), SeedCNN(inplace=False)
    reference.load_state_dict(model.state_dict())
    x, y = torch.randn(4, 1, 16, 16), torch.randint(0, 10, (4,))

    def run(net, register):
        norms: dict[str, float] = {}
        names = {m: n for n, m in net.named_modules()}

        def log_norm(m, grad_input, grad_output):
            norms[names[m]] = float(grad_output[0].norm())

        def clip(m, grad_input, grad_output):
            scale = [1.0 if g is None else min(1.0, 1.0 / (float(g.norm()) + 1e-12)) for g in grad_input]
            return tuple(None if g is None else g * k for g, k in zip(grad_input, scale))

        handles = register(net, log_norm) + register(net, clip)
        nn.functional.cross_entropy(net(x), y).backward()
        for handle in handles:
            handle.remove()
        return norms, [p.grad.clone() for p in net.parameters()]

    def with_torch(net, fn):
        return [m.register_full_backward_hook(fn) for m in net.children()]

    def with_hookline(net, fn):
        return [HookManager(net).register(list(net.children()), fn, kind="backward")]

    ours, our_grads = run(model, with_hookline)
    theirs, their_grads = run(reference, with_torch)
    assert ours.keys() == theirs.keys() and len(ours) == 10
    for name in theirs:
        assert ours[name] == pytest.approx(theirs[name], rel=1e-5), name
    for a, b in zip(our_grads, their_grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_gradient_monitor_and_gradient_flow_plot_on_the_in_place_resnet(tmp_path):
    from hookline.inspect import GradientMonitor, plot_gradient_flow  # noqa: PLC0415 - matplotlib

    model, reference = twins(2)
    x = torch.randn(2, 3, 16, 16)
    reference(x).sum().backward()
    with GradientMonitor(model) as monitor, HookManager(model) as manager:
        manager.register(nn.Module, lambda m, gi, go: None, kind="backward")   # both kinds of hook at once
        model(x).sum().backward()
    report = monitor.report()
    for name, param in reference.named_parameters():
        assert report[name]["norm"] == pytest.approx(float(param.grad.norm()), rel=1e-5), name
    plot_gradient_flow(monitor, tmp_path / "flow.png")
    assert (tmp_path / "flow.png").read_bytes()[:4] == b"\x89PNG"
