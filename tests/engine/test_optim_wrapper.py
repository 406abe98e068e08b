"""OptimWrapper, AmpOptimWrapper and OptimWrapperDict through their public API: accumulation
against hand-written PyTorch, clipping and grad_norm, learning rates and momenta, state,
the ``before_update`` event, bfloat16 autocast on CPU, and a GAN with two optimizers run by
the Runner (MMEngine's ``train_step(data, optim_wrapper)``)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, HookError, Runner
from hookline.engine import AmpOptimWrapper, MessageHub, OptimWrapper, OptimWrapperDict
from tests.hooks._toy import one_thread  # noqa: F401  (autouse: one torch thread)

QUIET = {"logger": None, "progress": None, "checkpoint": None}


def linear(seed: int = 0, shape=(3, 2)) -> torch.nn.Linear:
    torch.manual_seed(seed)
    return torch.nn.Linear(*shape)


def batches(count: int, seed: int = 1, rows: int = 4) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(rows, 3, generator=generator), torch.randn(rows, 2, generator=generator))
            for _ in range(count)]


def params_of(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def assert_close_lists(a, b) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-7)


# -- accumulation ---------------------------------------------------------------------------------

def test_accumulating_3_over_7_steps_at_3_6_7_with_the_loss_averaged_per_group():
    model = linear()
    reference = copy.deepcopy(model)
    data = batches(7)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    grads_at_step: list[list[torch.Tensor]] = []
    optimizer.register_step_pre_hook(
        lambda opt, args, kwargs: grads_at_step.append([p.grad.clone() for p in model.parameters()]))
    wrapper = OptimWrapper(optimizer, accumulative_counts=3)
    wrapper.initialize_count_status(model, 0, 7)
    assert (wrapper.inner_count, wrapper.max_counts) == (0, 7)
    syncs, updates = [], []
    for x, y in data:
        syncs.append(wrapper.should_sync())  # before backward: does it end a group?
        with wrapper.optim_context(model):
            loss = F.mse_loss(model(x), y)
        wrapper.update_params(loss)
        updates.append(wrapper.should_update())  # after backward: did it end one?
    assert updates == [False, False, True, False, False, True, True]
    assert syncs == updates
    assert len(grads_at_step) == 3 and wrapper.inner_count == 7
    assert all(p.grad is None for p in model.parameters())  # zeroed after the last step

    # plain PyTorch: groups [0, 1, 2], [3, 4, 5], [6]; each loss divided by its group's size
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    expected: list[list[torch.Tensor]] = []
    for group in ([0, 1, 2], [3, 4, 5], [6]):
        ref_optimizer.zero_grad()
        for i in group:
            x, y = data[i]
            (F.mse_loss(reference(x), y) / len(group)).backward()
        expected.append([p.grad.clone() for p in reference.parameters()])
        ref_optimizer.step()
    for got, want in zip(grads_at_step, expected):
        assert_close_lists(got, want)
    assert_close_lists(params_of(model), params_of(reference))


def test_counting_resumes_inside_a_group_and_full_groups_without_a_span():
    model = linear()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1), accumulative_counts=3)
    # no span set: every group has the full size
    updates = []
    for x, y in batches(4):
        wrapper.update_params(F.mse_loss(model(x), y))
        updates.append(wrapper.should_update())
    assert updates == [False, False, True, False]
    # a run resumed at call 4 of 7: group [3, 4, 5] ends after two calls, then [6]
    wrapper.initialize_count_status(model, 4, 7)
    updates = []
    for x, y in batches(3):
        wrapper.update_params(F.mse_loss(model(x), y))
        updates.append(wrapper.should_update())
    assert updates == [False, True, True]


def test_without_accumulation_every_call_steps():
    model = linear()
    before = params_of(model)
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    assert wrapper.should_sync() and wrapper.should_update()
    x, y = batches(1)[0]
    wrapper.update_params(F.mse_loss(model(x), y))
    assert wrapper.should_update()
    assert all(not torch.equal(a, b) for a, b in zip(before, params_of(model)))


def _train_with(wrapper_of, steps: int = 6) -> tuple[list[torch.Tensor], OptimWrapper]:
    """Weights after ``steps`` updates through ``wrapper_of(optimizer)``, and the wrapper."""
    model = linear()
    wrapper = wrapper_of(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    for x, y in batches(steps):
        wrapper.update_params(F.mse_loss(model(x), y))
    return params_of(model), wrapper


def test_the_one_frame_update_makes_the_same_steps_as_the_general_path(monkeypatch):
    """With nothing to add, update_params skips its own step methods; the weights are bit for
    bit those of the general path (taken here because a hook is on an event)."""
    ran: list[str] = []
    for name in ("backward", "step", "zero_grad"):
        original = getattr(OptimWrapper, name)

        def spy(self, *args, _original=original, _name=name, **kwargs):
            ran.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(OptimWrapper, name, spy)
    direct, wrapper = _train_with(OptimWrapper)
    assert ran == [] and wrapper.inner_count == 6

    def with_a_hook(optimizer):
        wrapper = OptimWrapper(optimizer)
        wrapper.before_step.register(lambda: None)
        return wrapper

    general, _ = _train_with(with_a_hook)
    assert ran == ["backward", "step", "zero_grad"] * 6
    assert all(torch.equal(a, b) for a, b in zip(direct, general))


def test_a_step_method_replaced_by_a_subclass_or_on_the_instance_still_runs():
    """A subclass overriding ``step`` (as MMEngine users write them) and a method assigned on
    the instance both run: the one-frame update is only for the stock methods."""
    calls: list[str] = []

    class Counting(OptimWrapper):
        def step(self, **kwargs):
            calls.append("subclass step")
            super().step(**kwargs)

    _train_with(Counting, steps=2)
    assert calls == ["subclass step"] * 2

    def patched(optimizer):
        wrapper = OptimWrapper(optimizer)
        original = wrapper.zero_grad
        wrapper.zero_grad = lambda **kwargs: calls.append("instance zero_grad") or original(**kwargs)
        return wrapper

    calls.clear()
    _train_with(patched, steps=2)
    assert calls == ["instance zero_grad"] * 2


def test_a_step_method_assigned_after_updates_ran_still_runs():
    """The instance is looked at again whenever it gains attributes, also after it has
    updated the direct way with more attributes than it was made with."""
    model = torch.nn.Linear(3, 1)
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    wrapper.message_hub = None  # as the Runner does after building it
    for _ in range(2):
        wrapper.update_params(model(torch.ones(2, 3)).sum())
    calls: list[str] = []
    original = wrapper.step
    wrapper.step = lambda **kwargs: calls.append("step") or original(**kwargs)
    wrapper.update_params(model(torch.ones(2, 3)).sum())
    assert calls == ["step"]


# -- learning rate and momentum ------------------------------------------------------------------

def test_get_lr_and_get_momentum_have_mmengines_shape():
    model = linear()
    sgd = torch.optim.SGD([{"params": [model.weight]}, {"params": [model.bias], "lr": 0.01}],
                          lr=0.1, momentum=0.9)
    wrapper = OptimWrapper(sgd)
    assert wrapper.get_lr() == {"lr": [0.1, 0.01]}
    assert wrapper.get_momentum() == {"momentum": [0.9, 0.9]}
    assert wrapper.param_groups is sgd.param_groups and wrapper.defaults["lr"] == 0.1
    adam = OptimWrapper(torch.optim.Adam(model.parameters(), lr=0.001, betas=(0.8, 0.99)))
    assert adam.get_lr() == {"lr": [0.001]} and adam.get_momentum() == {"momentum": [0.8]}
    adagrad = OptimWrapper(torch.optim.Adagrad(model.parameters(), lr=0.01))
    assert adagrad.get_momentum() == {"momentum": [0]}


# -- clipping ------------------------------------------------------------------------------------

def test_clip_grad_max_norm_clips_and_reports_the_unclipped_norm():
    model = linear()
    reference = copy.deepcopy(model)
    hub = MessageHub()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.5),
                           clip_grad={"max_norm": 0.01})
    wrapper.message_hub = hub
    assert wrapper.clip_grad == {"type": "norm", "max_norm": 0.01}
    x, y = batches(1)[0]
    wrapper.update_params(F.mse_loss(model(x), y))

    F.mse_loss(reference(x), y).backward()
    params = list(reference.parameters())
    norm = torch.nn.utils.get_total_norm([p.grad for p in params]).item()
    assert norm > 0.1  # so the clip changes the step
    assert hub.latest("train/grad_norm") == pytest.approx(norm, rel=1e-6)
    torch.nn.utils.clip_grad_norm_(params, 0.01)
    with torch.no_grad():
        for p in params:
            p -= 0.5 * p.grad
    assert_close_lists(params_of(model), params_of(reference))


@pytest.mark.parametrize("clip", [{"type": "value", "clip_value": 0.001}, {"max_value": 0.001}])
def test_clip_grad_by_value_in_mmengine_and_mmcv_spelling(clip):
    model = linear()
    reference = copy.deepcopy(model)
    hub = MessageHub()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=1.0), clip_grad=clip)
    wrapper.message_hub = hub
    assert wrapper.clip_grad == {"type": "value", "clip_value": 0.001}
    x, y = batches(1)[0]
    wrapper.update_params(F.mse_loss(model(x), y))

    F.mse_loss(reference(x), y).backward()
    grads = [p.grad.clone() for p in reference.parameters()]
    assert all(g.abs().max() > 0.001 for g in grads)  # so the clip changes the step
    assert "train/grad_norm" not in hub.log_scalars  # by value: no norm, as MMEngine
    with torch.no_grad():
        for p, g in zip(reference.parameters(), grads):
            p -= g.clamp(-0.001, 0.001)
    assert_close_lists(params_of(model), params_of(reference))


@pytest.mark.parametrize("clip", [1.0, {"norm": 1.0}, {"max_norm": 1.0, "max_value": 1.0},
                                  {"type": "value"}, {"type": "value", "max_norm": 1.0},
                                  {"type": "l2", "max_norm": 1.0}, {"max_norm": 1.0, "foo": 1}])
def test_a_bad_clip_grad_is_a_config_error_naming_the_accepted_shapes(clip):
    model = linear()
    with pytest.raises(ConfigError, match="clip_grad") as info:
        OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1), clip_grad=clip)
    message = str(info.value)
    assert "max_norm" in message and "clip_value" in message and "max_value" in message


@pytest.mark.parametrize("counts", [0, -2, 1.5, True, "2"])
def test_a_bad_accumulative_counts_is_a_config_error(counts):
    model = linear()
    with pytest.raises(ConfigError, match="accumulative_counts must be an int >= 1"):
        OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1), accumulative_counts=counts)


def test_a_wrapper_needs_a_torch_optimizer():
    model = linear()
    for not_an_optimizer in (model, {"type": "SGD", "lr": 0.1}, None):
        with pytest.raises(ConfigError, match="needs a torch.optim.Optimizer"):
            OptimWrapper(not_an_optimizer)


# -- state ---------------------------------------------------------------------------------------

def test_state_dict_round_trip_continues_identically():
    model = linear()
    wrapper = OptimWrapper(torch.optim.Adam(model.parameters(), lr=0.01))
    data = batches(3)
    for x, y in data[:2]:
        wrapper.update_params(F.mse_loss(model(x), y))
    state = wrapper.state_dict()
    assert state == wrapper.optimizer.state_dict()

    twin = copy.deepcopy(model)
    twin_wrapper = OptimWrapper(torch.optim.Adam(twin.parameters(), lr=0.5))
    twin_wrapper.load_state_dict(copy.deepcopy(state))
    assert twin_wrapper.get_lr() == {"lr": [0.01]}
    for key in ("exp_avg", "exp_avg_sq", "step"):
        assert torch.equal(twin_wrapper.state_dict()["state"][0][key], state["state"][0][key])
    x, y = data[2]
    wrapper.update_params(F.mse_loss(model(x), y))
    twin_wrapper.update_params(F.mse_loss(twin(x), y))
    assert_close_lists(params_of(model), params_of(twin))


def test_pending_grads_carry_an_unfinished_group_to_another_wrapper():
    model = linear()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1), accumulative_counts=2)
    wrapper.initialize_count_status(model, 0, 4)
    assert wrapper.pending_grads() is None  # no gradients yet
    (x0, y0), (x1, y1) = batches(2)
    wrapper.update_params(F.mse_loss(model(x0), y0))  # half a group
    pending = wrapper.pending_grads()
    assert pending is not None and len(pending) == 2
    assert all(torch.equal(g, p.grad) and g is not p.grad
               for g, p in zip(pending, model.parameters()))

    twin = copy.deepcopy(model)
    twin_wrapper = OptimWrapper(torch.optim.SGD(twin.parameters(), lr=0.1), accumulative_counts=2)
    twin_wrapper.initialize_count_status(twin, 1, 4)  # where the first wrapper is
    assert twin_wrapper.restore_grads(pending) is True
    assert all(torch.equal(a.grad, b.grad) for a, b in zip(model.parameters(), twin.parameters()))
    wrapper.update_params(F.mse_loss(model(x1), y1))
    twin_wrapper.update_params(F.mse_loss(twin(x1), y1))
    assert wrapper.should_update() and twin_wrapper.should_update()
    assert_close_lists(params_of(model), params_of(twin))
    assert wrapper.pending_grads() is None  # the group finished: nothing pending
    assert twin_wrapper.restore_grads(pending[:1]) is False  # other parameters
    plain = OptimWrapper(torch.optim.SGD(linear().parameters(), lr=0.1))
    assert plain.pending_grads() is None  # no accumulation: nothing is ever pending


# -- the before_update event ---------------------------------------------------------------------

def test_before_update_fires_with_the_unscaled_loss_before_backward():
    model = linear()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1), accumulative_counts=2)
    wrapper.initialize_count_status(model, 0, 2)
    seen: list[tuple[float, bool]] = []
    wrapper.before_update.register(
        lambda loss: seen.append((loss.item(), all(p.grad is None for p in model.parameters()))))
    x, y = batches(1)[0]
    loss = F.mse_loss(model(x), y)
    wrapper.update_params(loss)
    assert seen == [(loss.item(), True)]


def test_a_before_update_hook_that_raises_prevents_the_step():
    model = linear()
    before = params_of(model)
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))

    def refuse(loss):
        raise FloatingPointError("loss looks wrong")

    handle = wrapper.before_update.register(refuse)
    x, y = batches(1)[0]
    with pytest.raises(HookError, match="loss looks wrong") as info:
        wrapper.update_params(F.mse_loss(model(x), y))
    assert isinstance(info.value.__cause__, FloatingPointError)
    assert_close_lists(params_of(model), before)
    assert all(p.grad is None for p in model.parameters()) and wrapper.inner_count == 0
    handle.remove()
    wrapper.update_params(F.mse_loss(model(x), y))
    assert not torch.equal(model.weight, before[0])


# -- AmpOptimWrapper -----------------------------------------------------------------------------

def test_amp_on_cpu_autocasts_to_bfloat16_without_a_scaler():
    model = linear()
    before = params_of(model)
    wrapper = AmpOptimWrapper(optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    assert (wrapper.dtype, wrapper.device_type, wrapper.loss_scaler) == (torch.bfloat16, "cpu",
                                                                         None)
    x, y = batches(1)[0]
    with wrapper.optim_context(model):
        out = model(x)
    assert out.dtype == torch.bfloat16 and model(x).dtype == torch.float32
    with wrapper.autocast():
        assert model(x).dtype == torch.bfloat16
    wrapper.update_params(F.mse_loss(out.float(), y))
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert not torch.equal(model.weight, before[0])
    assert "loss_scaler" not in wrapper.state_dict()


@pytest.mark.parametrize(("dtype", "expected"), [("float16", torch.float16),
                                                 ("fp16", torch.float16),
                                                 ("bfloat16", torch.bfloat16),
                                                 ("bf16", torch.bfloat16),
                                                 (torch.float16, torch.float16)])
def test_amp_dtype_accepts_names_and_torch_dtypes(dtype, expected):
    model = linear()
    wrapper = AmpOptimWrapper(optimizer=torch.optim.SGD(model.parameters(), lr=0.1), dtype=dtype)
    assert wrapper.dtype == expected
    # float16 gradients underflow on a CPU too: a loss scaler there as well; bfloat16 needs none
    assert (wrapper.loss_scaler is not None) == (expected == torch.float16)


def test_float16_on_cpu_scales_the_loss_as_given():
    """MMEngine refuses AMP on a CPU; hookline runs it, and float16 keeps its loss scaling
    (a static loss_scale was dropped silently before)."""
    model = linear()
    wrapper = AmpOptimWrapper(optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                              dtype="float16", loss_scale=512.0)
    assert wrapper.loss_scaler is not None and wrapper.loss_scaler.get_scale() == 512.0
    before = params_of(model)
    x, y = batches(1)[0]
    with wrapper.optim_context(model):
        out = model(x)
    assert out.dtype == torch.float16
    wrapper.update_params(F.mse_loss(out.float(), y))
    assert not torch.equal(model.weight, before[0]) and torch.isfinite(model.weight).all()
    assert wrapper.loss_scaler.get_scale() == 512.0  # static: put back after the update
    assert "loss_scaler" in wrapper.state_dict()


@pytest.mark.parametrize("dtype", ["float8", "int8", "BF16x"])  # float32: MMEngine's too
def test_an_unknown_amp_dtype_is_a_config_error_listing_the_names(dtype):
    model = linear()
    with pytest.raises(ConfigError, match="dtype must be one of") as info:
        AmpOptimWrapper(optimizer=torch.optim.SGD(model.parameters(), lr=0.1), dtype=dtype)
    assert "bfloat16" in str(info.value) and "float16" in str(info.value)


@pytest.mark.parametrize("scale", ["dynamic", 512.0, 128, {"init_scale": 2.0, "growth_interval": 4}])
def test_amp_accepts_the_loss_scale_forms(scale):
    model = linear()
    wrapper = AmpOptimWrapper(optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                              loss_scale=scale)
    assert wrapper.loss_scale == scale


@pytest.mark.parametrize("scale", ["auto", -1.0, 0, True, None, {"init_scale": 2.0, "mode": "x"}])
def test_a_bad_loss_scale_is_a_config_error(scale):
    model = linear()
    with pytest.raises(ConfigError, match="loss_scale"):
        AmpOptimWrapper(optimizer=torch.optim.SGD(model.parameters(), lr=0.1), loss_scale=scale)


# -- through the Runner ---------------------------------------------------------------------------

def classification(n: int = 16) -> DataLoader:
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(n, 3, generator=generator)
    return DataLoader(TensorDataset(x, (x[:, 0] > 0).long()), batch_size=4)


def test_runner_refuses_optimizer_and_optim_wrapper_together(tmp_path):
    with pytest.raises(ConfigError, match="not both"):
        Runner(linear(), optimizer={"type": "SGD", "lr": 0.1},
               optim_wrapper={"optimizer": {"type": "SGD", "lr": 0.1}}, work_dir=tmp_path, device="cpu",
               default_hooks=QUIET)


def test_runner_builds_an_amp_wrapper_config_with_clipping_and_accumulation(tmp_path):
    runner = Runner(linear(), loss_fn=torch.nn.CrossEntropyLoss(), optim_wrapper={
        "type": "AmpOptimWrapper", "optimizer": {"type": "SGD", "lr": 0.1, "momentum": 0.9},
        "clip_grad": {"max_norm": 1.0}, "accumulative_counts": 2},
        train_dataloader=classification(), max_epochs=1, work_dir=tmp_path, device="cpu",
        default_hooks=QUIET)
    wrapper = runner.optim_wrapper
    assert type(wrapper) is AmpOptimWrapper
    assert wrapper.clip_grad == {"type": "norm", "max_norm": 1.0}
    assert wrapper.accumulative_counts == 2 and wrapper.dtype == torch.bfloat16
    assert runner.optimizer is wrapper.optimizer and isinstance(runner.optimizer, torch.optim.SGD)
    assert runner.optimizer.param_groups[0]["lr"] == 0.1 and runner.grad_scaler is None
    assert wrapper.message_hub is runner.message_hub
    before = params_of(runner.model)
    runner.train()
    assert not torch.equal(before[0], runner.model.weight)
    assert "train/grad_norm" in runner.message_hub


def test_runner_uses_a_given_wrapper_object_and_gives_it_the_message_hub(tmp_path):
    model = linear()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    runner = Runner(model, optim_wrapper=wrapper, loss_fn=torch.nn.CrossEntropyLoss(),
                    train_dataloader=classification(), max_iters=2, work_dir=tmp_path, device="cpu",
                    default_hooks=QUIET)
    assert runner.optim_wrapper is wrapper and runner.optimizer is wrapper.optimizer
    assert wrapper.message_hub is runner.message_hub


class GAN(torch.nn.Module):
    """A generator and a discriminator, each updated by its own optimizer in ``train_step``."""

    def __init__(self) -> None:
        super().__init__()
        self.generator = torch.nn.Linear(2, 2)
        self.discriminator = torch.nn.Linear(2, 1)

    def train_step(self, data, optim_wrapper):
        real = data[0]
        noise = torch.randn(len(real), 2)
        fake = self.generator(noise)
        d_loss = (F.softplus(self.discriminator(fake.detach())).mean()
                  + F.softplus(-self.discriminator(real)).mean())
        optim_wrapper["discriminator"].update_params(d_loss)
        g_loss = F.softplus(-self.discriminator(self.generator(noise))).mean()
        optim_wrapper["generator"].update_params(g_loss)
        self.discriminator.zero_grad(set_to_none=True)  # g_loss reached it too
        return {"loss_d": d_loss.detach(), "loss_g": g_loss.detach()}


GAN_WRAPPERS = {"generator": {"optimizer": {"type": "SGD", "lr": 0.1}},
                "discriminator": {"optimizer": {"type": "Adam", "lr": 0.01}}}


def gan_runner(work_dir, *, max_iters: int = 4, hooks=(), resume=None,
               optim_wrapper=None) -> Runner:
    torch.manual_seed(0)
    model = GAN()
    generator = torch.Generator().manual_seed(5)
    real = torch.randn(16, 2, generator=generator) + 2.0
    return Runner(model, optim_wrapper=GAN_WRAPPERS if optim_wrapper is None else optim_wrapper,
                  train_dataloader=DataLoader(TensorDataset(real), batch_size=4, shuffle=True),
                  max_iters=max_iters, work_dir=work_dir, hooks=hooks, resume=resume, device="cpu",
                  default_hooks=QUIET)


def test_a_gan_updates_both_submodules_through_an_optim_wrapper_dict(tmp_path):
    runner = gan_runner(tmp_path)
    wrappers = runner.optim_wrapper
    assert isinstance(wrappers, OptimWrapperDict) and list(wrappers) == ["generator",
                                                                         "discriminator"]
    assert isinstance(wrappers["generator"].optimizer, torch.optim.SGD)
    assert isinstance(wrappers["discriminator"].optimizer, torch.optim.Adam)
    # each optimizer holds exactly its submodule's parameters
    for name in wrappers:
        held = {id(p) for group in wrappers[name].param_groups for p in group["params"]}
        assert held == {id(p) for p in getattr(runner.model, name).parameters()}
    assert wrappers.get_lr() == {"generator.lr": [0.1], "discriminator.lr": [0.01]}
    assert wrappers.get_momentum() == {"generator.momentum": [0], "discriminator.momentum": [0.9]}
    assert runner.optimizer is None and wrappers["generator"].message_hub is runner.message_hub
    generator, discriminator = params_of(runner.model.generator), params_of(
        runner.model.discriminator)
    runner.train()
    assert runner.iter == 4
    assert all(not torch.equal(a, b) for a, b in zip(generator, runner.model.generator.parameters()))
    assert all(not torch.equal(a, b)
               for a, b in zip(discriminator, runner.model.discriminator.parameters()))
    assert {"train/loss_d", "train/loss_g"} <= set(runner.message_hub.keys("train/"))


def test_a_gan_checkpoint_round_trips_into_a_fresh_runner(tmp_path):
    runner = gan_runner(tmp_path / "a")
    runner.train()
    path = runner.save_checkpoint("gan.pth")
    assert path == tmp_path / "a" / "gan.pth" and path.exists()
    saved = torch.load(path, weights_only=True)
    assert set(saved["optimizer"]) == {"generator", "discriminator"}

    fresh = gan_runner(tmp_path / "b", resume=path)
    fresh.train()  # loads the checkpoint; the 4 iterations are already done
    assert fresh.iter == 4
    for (name, a), b in zip(runner.model.state_dict().items(), fresh.model.state_dict().values()):
        assert torch.equal(a, b), name
    a_state = runner.optim_wrapper["discriminator"].state_dict()["state"]
    b_state = fresh.optim_wrapper["discriminator"].state_dict()["state"]
    assert a_state.keys() == b_state.keys()
    for key in a_state:
        for field in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(a_state[key][field], b_state[key][field])


def test_a_gan_resumed_mid_run_matches_the_uninterrupted_run(tmp_path):
    full = gan_runner(tmp_path / "full", max_iters=7)
    full.on("after_train_iter",
            lambda r, **kw: r.save_checkpoint("iter_3.pth") if r.iter + 1 == 3 else None)
    full.train()
    resumed = gan_runner(tmp_path / "resumed", max_iters=7,
                         resume=tmp_path / "full" / "iter_3.pth")
    resumed.train()
    for (name, a), b in zip(full.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name


def test_update_params_on_the_dict_names_the_per_optimizer_form(tmp_path):
    wrappers = gan_runner(tmp_path).optim_wrapper
    loss = torch.tensor(1.0, requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"optim_wrapper\['generator'\]\.update_params"):
        wrappers.update_params(loss)
    for method, args in (("backward", (loss,)), ("step", ())):  # zero_grad zeroes them all
        with pytest.raises(NotImplementedError, match=rf"optim_wrapper\['generator'\]\.{method}"):
            getattr(wrappers, method)(*args)


def test_an_optim_wrapper_key_that_is_not_a_submodule_lists_the_submodules(tmp_path):
    bad = {"gen": {"optimizer": {"type": "SGD", "lr": 0.1}},
           "discriminator": {"optimizer": {"type": "Adam", "lr": 0.01}}}
    with pytest.raises(ConfigError, match="no submodule 'gen'") as info:
        gan_runner(tmp_path, optim_wrapper=bad)
    assert "generator" in str(info.value) and "discriminator" in str(info.value)


def test_optim_wrapper_dict_holds_only_optim_wrappers():
    with pytest.raises(ConfigError, match="must be an OptimWrapper"):
        OptimWrapperDict(generator=torch.optim.SGD(linear().parameters(), lr=0.1))


def test_optim_wrapper_dict_refuses_state_for_an_unknown_name(tmp_path):
    wrappers = gan_runner(tmp_path).optim_wrapper
    state = wrappers.state_dict()
    state["critic"] = state.pop("discriminator")
    with pytest.raises(ConfigError, match="'critic'") as info:
        wrappers.load_state_dict(state)
    assert "discriminator" in str(info.value)


def test_restore_grads_refuses_gradients_of_other_shapes():
    model = linear()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1), accumulative_counts=2)
    assert wrapper.restore_grads([torch.zeros(5, 5), torch.zeros(7)]) is False
    assert all(p.grad is None for p in model.parameters())
