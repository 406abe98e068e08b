"""The optimizer wrapper's events around backward, step and zero_grad (``before_backward``,
``after_backward``, ``before_step``, ``before_zero_grad``): when they fire, with what, in an
accumulation group and under a loss scaler."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from hookline import HookError
from hookline.engine import AmpOptimWrapper, OptimWrapper
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

EVENTS = ("before_update", "before_backward", "after_backward", "before_step", "before_zero_grad")


def linear() -> torch.nn.Linear:
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2)


def data(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(4, 3, generator=generator), torch.randn(4, 2, generator=generator)


def record(wrapper: OptimWrapper, model: torch.nn.Module) -> list[tuple]:
    """Every event with its loss (if any) and whether the weight has a gradient then."""
    seen: list[tuple] = []
    for name in EVENTS:
        def listener(*args, _name=name):
            loss = tuple(round(float(a.detach()), 6) for a in args)
            seen.append((_name, *loss, model.weight.grad is not None))
        getattr(wrapper, name).register(listener)
    return seen


def test_events_fire_in_order_with_the_loss_that_is_back_propagated():
    model = linear()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1), accumulative_counts=2,
                           clip_grad={"max_norm": 1e-3})
    wrapper.initialize_count_status(model, 0, 3)  # groups of 2 and 1
    seen = record(wrapper, model)
    norms = []
    wrapper.before_step.register(lambda: norms.append(float(model.weight.grad.norm())))
    losses = []
    for seed in (1, 2, 3):
        x, y = data(seed)
        loss = F.mse_loss(model(x), y)
        losses.append(round(float(loss.detach()), 6))
        wrapper.update_params(loss)
    half = [round(v / 2, 6) for v in losses[:2]]
    assert seen == [
        ("before_update", losses[0], False), ("before_backward", half[0], False),
        ("after_backward", True),
        ("before_update", losses[1], True), ("before_backward", half[1], True),
        ("after_backward", True), ("before_step", True), ("before_zero_grad", True),
        # the last, shorter group has one loss: not divided
        ("before_update", losses[2], False), ("before_backward", losses[2], False),
        ("after_backward", True), ("before_step", True), ("before_zero_grad", True)]
    assert all(norm > 1e-3 for norm in norms)  # before_step comes before clipping


def test_a_listener_that_raises_stops_before_the_weights_change():
    model = linear()
    before = model.weight.detach().clone()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))

    def refuse():
        raise FloatingPointError("gradients look wrong")

    handle = wrapper.before_step.register(refuse)
    x, y = data()
    with pytest.raises(HookError, match="gradients look wrong"):
        wrapper.update_params(F.mse_loss(model(x), y))
    assert torch.equal(model.weight, before) and model.weight.grad is not None
    handle.remove()
    wrapper.update_params(F.mse_loss(model(x), y))
    assert not torch.equal(model.weight, before)


def test_under_a_loss_scaler_before_step_sees_the_true_gradients():
    model, twin = linear(), linear()
    wrapper = AmpOptimWrapper(optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    wrapper.loss_scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)  # as float16 on CUDA
    scaled, grads = [], []
    wrapper.before_backward.register(lambda loss: scaled.append(float(loss.detach())))
    wrapper.before_step.register(lambda: grads.append(model.weight.grad.clone()))
    x, y = data()
    loss = F.mse_loss(model(x), y)
    wrapper.update_params(loss)
    F.mse_loss(twin(x), y).backward()
    assert scaled == [pytest.approx(1024.0 * float(loss.detach()))]
    torch.testing.assert_close(grads[0], twin.weight.grad)  # unscaled before the listener
    torch.optim.SGD(twin.parameters(), lr=0.1).step()
    torch.testing.assert_close(model.weight, twin.weight)  # and the step took them once

