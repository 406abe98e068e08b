"""MMEngine's optimizer-wrapper rules on frozen parameters and accumulation spans, on real
runs against hand-written PyTorch: a config's optimizer holds every parameter (a backbone
frozen at build and unfrozen later trains), clipping counts only ``requires_grad``
parameters, ``_accumulative_counts`` reads ``accumulative_counts``, and updates past the
span ``initialize_count_status`` set are one clear error."""

from __future__ import annotations

import logging

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner
from hookline.engine import MessageHub, OptimWrapper
from hookline.engine.build import build_optim_wrapper
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

QUIET = {"logger": None, "progress": None, "checkpoint": None}


def net() -> torch.nn.Sequential:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


def data(n: int = 16) -> TensorDataset:
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(n, 3, generator=generator)
    return TensorDataset(x, (x[:, 0] > 0).long())


class Thaw(Hook):
    """Unfreezes the backbone (``model[0]``) before iteration ``at``."""

    def __init__(self, at: int) -> None:
        self.at = at

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        if runner.iter == self.at:
            runner.model[0].requires_grad_(True)


def hand_loop(iters: int, thaw_at: int) -> torch.nn.Sequential:
    """MMEngine's run: SGD over every parameter; torch skips those without a gradient."""
    model = net()
    model[0].requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)
    batches = list(DataLoader(data(), batch_size=4))
    for i in range(iters):
        if i == thaw_at:
            model[0].requires_grad_(True)
        x, y = batches[i % len(batches)]
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return model


@pytest.mark.parametrize("form", ["optimizer", "optim_wrapper"])
def test_a_backbone_frozen_at_build_and_unfrozen_by_a_hook_trains(tmp_path, form, caplog):
    model = net()
    model[0].requires_grad_(False)  # frozen when the Runner builds the optimizer
    frozen = [p.detach().clone() for p in model[0].parameters()]
    sgd = {"type": "SGD", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}
    given = {"optimizer": sgd} if form == "optimizer" else {"optim_wrapper": {"optimizer": sgd}}
    runner = Runner(model, loss_fn=torch.nn.CrossEntropyLoss(),
                    train_dataloader=DataLoader(data(), batch_size=4), max_iters=6,
                    work_dir=tmp_path, device="cpu", default_hooks=QUIET, hooks=[Thaw(3)], **given)
    assert [p for g in runner.optimizer.param_groups for p in g["params"]] == list(
        model.parameters())
    runner.logger.propagate = True
    with caplog.at_level(logging.WARNING):
        runner.train()
    assert not [r for r in caplog.records if "in no optimizer" in r.getMessage()]
    expected = hand_loop(6, thaw_at=3)
    assert not torch.equal(frozen[0], model[0].weight)  # trained after the thaw
    for got, want in zip(model.parameters(), expected.parameters()):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7)


def test_a_submodule_dict_gives_each_optimizer_its_frozen_parameters_too():
    class Pair(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.generator, self.discriminator = net(), net()

    model = Pair()
    model.generator[0].requires_grad_(False)
    wrappers = build_optim_wrapper(None, {"generator": {"optimizer": {"type": "SGD", "lr": 0.1}},
                                          "discriminator": {"optimizer": {"type": "SGD", "lr": 0.1}}},
                                   model)
    held = [p for g in wrappers["generator"].optimizer.param_groups for p in g["params"]]
    assert held == list(model.generator.parameters())


def test_clipping_counts_and_clips_only_parameters_that_require_grad():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))
    hub = MessageHub()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1),
                           clip_grad={"max_norm": 0.5})
    wrapper.message_hub = hub
    (model(torch.randn(4, 4)) ** 2).sum().backward()
    model[0].weight.requires_grad_(False)  # frozen after its gradient came in (a GAN toggle)
    kept = model[0].weight.grad.clone()
    counted = [p for p in model.parameters() if p.requires_grad]
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in counted]))
    expected = [p.grad * (0.5 / (norm + 1e-6)) for p in counted]
    weights = [p.detach().clone() for p in counted]
    wrapper.step()
    assert hub.latest("train/grad_norm") == pytest.approx(norm.item(), rel=1e-6)
    assert torch.equal(model[0].weight.grad, kept)  # not clipped, not counted
    for param, before, grad in zip(counted, weights, expected):
        torch.testing.assert_close(param.detach(), before - 0.1 * grad)


def test_accumulative_counts_under_mmengines_private_name_is_read_only():
    wrapper = OptimWrapper(torch.optim.SGD(net().parameters(), lr=0.1), accumulative_counts=3)
    assert wrapper._accumulative_counts == 3  # noqa: SLF001  (what mmagic's BaseGAN reads)
    with pytest.raises(AttributeError):
        wrapper._accumulative_counts = 2  # type: ignore[misc]  # noqa: SLF001


def test_updates_past_the_span_are_an_error_naming_the_fix():
    model = torch.nn.Linear(3, 1)
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1), accumulative_counts=2)
    wrapper.initialize_count_status(model, 0, 4)
    updates = []
    for _ in range(4):
        wrapper.update_params(model(torch.ones(1, 3)).sum())
        updates.append(wrapper.should_update())
    assert updates == [False, True, False, True]
    with pytest.raises(RuntimeError, match=r"update 5 of a span of 4 .*"
                                           r"initialize_count_status\(model, 0, <its updates>\)"):
        wrapper.update_params(model(torch.ones(1, 3)).sum())
    assert all(p.grad is None for p in model.parameters())  # nothing reached the weights
    plain = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    plain.initialize_count_status(model, 0, 1)
    for _ in range(3):  # without accumulation there is nothing to scale: no span to keep
        plain.update_params(model(torch.ones(1, 3)).sum())


def test_a_span_not_divisible_by_the_group_ends_with_a_short_group_as_in_mmengine():
    # MMEngine's trace for accumulative_counts=2 over initialize_count_status(0, 5):
    # steps after updates 2, 4 and 5; the last loss is divided by 1, the others by 2
    model = torch.nn.Linear(3, 1)
    reference = torch.nn.Linear(3, 1)
    reference.load_state_dict(model.state_dict())
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                           accumulative_counts=2)
    wrapper.initialize_count_status(model, 0, 5)
    trace = []
    for i in range(5):
        loss = model(torch.ones(2, 3) * (i + 1)).pow(2).mean()
        wrapper.backward(wrapper.scale_loss(loss))
        if wrapper.should_update():
            wrapper.step()
            wrapper.zero_grad()
        trace.append((wrapper.inner_count, wrapper.should_update()))
    assert trace == [(1, False), (2, True), (3, False), (4, True), (5, True)]
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for group, size in (([0, 1], 2), ([2, 3], 2), ([4], 1)):
        for i in group:
            (reference(torch.ones(2, 3) * (i + 1)).pow(2).mean() / size).backward()
        optimizer.step()
        optimizer.zero_grad()
    for got, want in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(got, want)
