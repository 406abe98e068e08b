"""``OptimWrapperDict`` as MMEngine's, on real GAN runs against hand-written PyTorch: each
wrapper counts its own accumulation groups (the loop's ``initialize_count_status`` leaves
them alone, so a critic updated twice per iteration keeps dividing its losses, and the
run's unfinished last group does not step), resuming inside a group stays exact,
``zero_grad()`` zeroes every wrapper, ``param_groups`` is ``{name: groups}``."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from hookline import Runner
from hookline.engine import OptimWrapper, OptimWrapperDict
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

QUIET = {"logger": None, "progress": None, "checkpoint": None}


def data() -> TensorDataset:
    generator = torch.Generator().manual_seed(123)
    real = torch.randn(32, 2, generator=generator) * 0.5 + 1.0
    noise = torch.randn(32, 2, generator=generator)
    return TensorDataset(real, noise)


class Critic(torch.nn.Module):
    """A WGAN-style model: ``d_updates`` discriminator updates per iteration, then one of the
    generator (the discriminator frozen meanwhile, as mmagic does)."""

    def __init__(self, d_updates: int = 1) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.generator = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(),
                                             torch.nn.Linear(8, 2))
        self.discriminator = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.LeakyReLU(0.2),
                                                 torch.nn.Linear(8, 1))
        self.d_updates = d_updates

    def d_loss(self, real: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        fake = self.generator(noise).detach()
        return (F.softplus(self.discriminator(fake)).mean()
                + F.softplus(-self.discriminator(real)).mean())

    def g_loss(self, noise: torch.Tensor) -> torch.Tensor:
        return F.softplus(-self.discriminator(self.generator(noise))).mean()

    def train_step(self, data, optim_wrapper):
        real, noise = data
        for _ in range(self.d_updates):
            optim_wrapper["discriminator"].update_params(self.d_loss(real, noise))
        self.discriminator.requires_grad_(False)
        optim_wrapper["generator"].update_params(self.g_loss(noise))
        self.discriminator.requires_grad_(True)
        return {"loss": self.g_loss(noise).detach()}


def wrappers(d_counts: int) -> dict:
    return {"generator": {"optimizer": {"type": "Adam", "lr": 1e-2, "betas": (0.0, 0.99)}},
            "discriminator": {"optimizer": {"type": "Adam", "lr": 2e-2, "betas": (0.5, 0.99)},
                              "accumulative_counts": d_counts}}


def run(tmp_path, *, d_updates: int, d_counts: int, max_iters: int, **kwargs) -> Runner:
    runner = Runner(Critic(d_updates), optim_wrapper=wrappers(d_counts),
                    train_dataloader=DataLoader(data(), batch_size=8), max_iters=max_iters,
                    work_dir=tmp_path, device="cpu", default_hooks=kwargs.pop("default_hooks",
                                                                               QUIET), **kwargs)
    runner.train()
    return runner


def mmengine_loop(*, d_updates: int, d_counts: int, max_iters: int) -> Critic:
    """MMEngine's semantics by hand: the discriminator's updates are counted on their own,
    every loss is divided by ``d_counts``, and it steps after every ``d_counts``-th update
    (an unfinished group at the end does not step); the generator steps every iteration."""
    model = Critic(d_updates)
    g_opt = torch.optim.Adam(model.generator.parameters(), lr=1e-2, betas=(0.0, 0.99))
    d_opt = torch.optim.Adam(model.discriminator.parameters(), lr=2e-2, betas=(0.5, 0.99))
    batches = list(DataLoader(data(), batch_size=8))
    updates = 0
    for i in range(max_iters):
        real, noise = batches[i % len(batches)]
        for _ in range(d_updates):
            (model.d_loss(real, noise) / d_counts).backward()
            updates += 1
            if updates % d_counts == 0:
                d_opt.step()
                d_opt.zero_grad(set_to_none=True)
        model.discriminator.requires_grad_(False)
        model.g_loss(noise).backward()
        g_opt.step()
        g_opt.zero_grad(set_to_none=True)
        model.discriminator.requires_grad_(True)
    return model


def assert_same(got: torch.nn.Module, want: torch.nn.Module) -> None:
    for (name, a), b in zip(got.state_dict().items(), want.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)


def test_a_critic_updated_twice_per_iteration_keeps_whole_groups_all_run(tmp_path):
    runner = run(tmp_path, d_updates=2, d_counts=2, max_iters=6)  # 12 updates, 6 groups of 2
    assert runner.optim_wrapper["discriminator"].inner_count == 12
    assert_same(runner.model, mmengine_loop(d_updates=2, d_counts=2, max_iters=6))


def test_the_runs_unfinished_last_group_does_not_step_as_in_mmengine(tmp_path):
    runner = run(tmp_path, d_updates=1, d_counts=3, max_iters=5)  # groups [0 1 2], [3 4 ...
    assert_same(runner.model, mmengine_loop(d_updates=1, d_counts=3, max_iters=5))
    assert all(p.grad is not None for p in runner.model.discriminator.parameters())  # pending


def test_resuming_inside_a_group_of_a_dict_is_exact(tmp_path):
    every_3 = {"logger": None, "progress": None,
               "checkpoint": {"type": "CheckpointHook", "interval": 3, "by_epoch": False}}
    full = run(tmp_path / "full", d_updates=1, d_counts=2, max_iters=7, default_hooks=every_3)
    saved = torch.load(tmp_path / "full" / "iter_3.pth", weights_only=True)
    assert saved["pending_grads"]["discriminator"]["inner_count"] == 3
    resumed = run(tmp_path / "resumed", d_updates=1, d_counts=2, max_iters=7,
                  resume=tmp_path / "full" / "iter_3.pth")
    assert_same(resumed.model, full.model)
    assert_same(full.model, mmengine_loop(d_updates=1, d_counts=2, max_iters=7))


def pair() -> tuple[torch.nn.Linear, torch.nn.Linear, OptimWrapperDict]:
    torch.manual_seed(0)
    g, d = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    return g, d, OptimWrapperDict(
        generator=OptimWrapper(torch.optim.SGD(g.parameters(), lr=0.1)),
        discriminator=OptimWrapper(torch.optim.SGD(d.parameters(), lr=0.2),
                                   accumulative_counts=2))


def test_pending_gradients_of_older_checkpoints_still_restore():
    g, d, wrappers = pair()
    d(torch.ones(1, 2)).sum().backward()
    old_format = {"discriminator": [p.grad.clone() for p in d.parameters()]}
    d.zero_grad(set_to_none=True)
    assert wrappers.restore_grads(old_format) is True
    assert all(torch.equal(p.grad, q) for p, q in zip(d.parameters(),
                                                      old_format["discriminator"]))


def test_zero_grad_zeroes_every_wrapper_and_param_groups_is_by_name():
    g, d, wrappers = pair()
    (g(torch.ones(1, 2)).sum() + d(torch.ones(1, 2)).sum()).backward()
    wrappers.zero_grad()
    assert all(p.grad is None for p in [*g.parameters(), *d.parameters()])
    groups = wrappers.param_groups
    assert list(groups) == ["generator", "discriminator"]
    assert groups["discriminator"] is wrappers["discriminator"].optimizer.param_groups
    assert wrappers.get_lr() == {"generator.lr": [0.1], "discriminator.lr": [0.2]}


def test_an_unknown_name_is_a_key_error_naming_the_known_ones():
    _, _, wrappers = pair()
    with pytest.raises(KeyError, match="'ema'.*'generator', 'discriminator'"):
        wrappers["ema"]
    assert not isinstance(wrappers, OptimWrapper)  # a documented difference from MMEngine
