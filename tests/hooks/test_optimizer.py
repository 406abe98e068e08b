"""OptimizerHook / Fp16OptimizerHook on real runs: accumulation against hand-written
loops (including the short last group), resume in the middle of a group, clipping and
grad_norm, bf16 autocast on CPU, and the GradScaler paths on CUDA (skipped without it)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import HOOKS, ConfigError, Hook, Runner
from hookline.hooks import Fp16OptimizerHook, GradientCumulativeOptimizerHook, OptimizerHook

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def dataset(n: int = 40) -> TensorDataset:
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(n, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] * x[:, 1] > 0).long())


def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


def make_runner(work_dir, optimizer_hook, *, model=None, max_epochs=None, max_iters=None,
                hooks=(), checkpoint=None, resume=None, device="cpu", lr=0.2) -> Runner:
    model = model if model is not None else net()
    return Runner(model, optimizer={"type": "SGD", "lr": lr, "momentum": 0.9},
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(dataset(), batch_size=4),  # 10 batches, in order
                  max_epochs=max_epochs, max_iters=max_iters, work_dir=work_dir, device=device,
                  hooks=hooks, resume=resume, default_hooks={
                      "logger": None, "progress": None, "checkpoint": checkpoint,
                      "optimizer": optimizer_hook})


def hand_loop(groups: list[list[int]], passes: int = 1, divisor: int | None = None
              ) -> torch.nn.Module:
    """Plain PyTorch: for each group of batch indices, average the loss over the group."""
    model = net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    batches = list(DataLoader(dataset(), batch_size=4))
    for _ in range(passes):
        for group in groups:
            optimizer.zero_grad()
            for index in group:
                x, y = batches[index]
                (torch.nn.functional.cross_entropy(model(x), y) / (divisor or len(group))).backward()
            optimizer.step()
    return model


def assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-7, msg=name)


def test_accumulate_3_over_10_batches_groups_3_3_3_1_with_the_loss_averaged_per_group(tmp_path):
    runner = make_runner(tmp_path, {"type": "OptimizerHook", "accumulate": 3}, max_epochs=2)
    runner.train()
    expected = hand_loop([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]], passes=2)
    assert_same_weights(runner.model, expected)
    # dividing the short last group by 3 (or dropping it) would give other weights
    for wrong in (hand_loop([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]], passes=2, divisor=3),
                  hand_loop([[0, 1, 2], [3, 4, 5], [6, 7, 8]], passes=2)):
        assert not torch.allclose(wrong[0].weight, runner.model[0].weight, atol=1e-5)


def test_accumulate_in_an_iteration_based_run_spans_passes_and_ends_short(tmp_path):
    runner = make_runner(tmp_path, GradientCumulativeOptimizerHook(cumulative_iters=4),
                         max_iters=14)
    runner.train()
    # iterations 0..13 over batches 0..9, 0..3: groups of 4, 4, 4, 2
    expected = hand_loop([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1], [2, 3]])
    assert_same_weights(runner.model, expected)


def test_resume_in_the_middle_of_an_accumulation_group_is_exact(tmp_path):
    every_2 = {"type": "CheckpointHook", "interval": 2, "by_epoch": False}
    full = make_runner(tmp_path / "full", OptimizerHook(accumulate=3), max_epochs=2,
                       checkpoint=every_2)
    full.train()
    saved = torch.load(tmp_path / "full" / "iter_4.pth", weights_only=True)
    assert "pending_grads" in saved  # iteration 4 of group 3..5
    resumed = make_runner(tmp_path / "resumed", OptimizerHook(accumulate=3), max_epochs=2,
                          resume=tmp_path / "full" / "iter_4.pth")
    resumed.train()
    for a, b in zip(full.model.parameters(), resumed.model.parameters()):
        assert torch.equal(a, b)


class GradNorm(Hook):
    priority = "LOWEST"

    def __init__(self) -> None:
        self.norms: list[float] = []

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        if "train/grad_norm" in runner.message_hub.log_scalars:  # clipping by norm only
            self.norms.append(runner.message_hub.latest("train/grad_norm"))


@pytest.mark.parametrize("clip", [{"max_norm": 0.05}, {"max_norm": 0.5, "norm_type": 1.0},
                                  {"max_value": 0.01}])
def test_clipping_logs_the_unclipped_norm_and_clips(tmp_path, clip):
    record = GradNorm()
    runner = make_runner(tmp_path, OptimizerHook(grad_clip=clip), max_iters=1, hooks=[record])
    runner.train()
    model = net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    x, y = next(iter(DataLoader(dataset(), batch_size=4)))
    torch.nn.functional.cross_entropy(model(x), y).backward()
    params = list(model.parameters())
    norm_type = clip.get("norm_type", 2.0)
    expected = torch.nn.utils.get_total_norm([p.grad for p in params], norm_type)
    assert record.norms == ([pytest.approx(expected.item(), rel=1e-6)] if "max_norm" in clip
                            else [])  # by value: no norm, as MMEngine
    if "max_norm" in clip:
        torch.nn.utils.clip_grad_norm_(params, clip["max_norm"], norm_type)
    else:
        torch.nn.utils.clip_grad_value_(params, clip["max_value"])
    optimizer.step()
    assert_same_weights(runner.model, model)


class Dtypes(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = net()
        self.seen: list[torch.dtype] = []

    def forward(self, x):
        out = self.body(x)
        self.seen.append(out.dtype)
        return out


@pytest.mark.parametrize("hook", [OptimizerHook(amp=True), Fp16OptimizerHook()])
def test_amp_on_cpu_trains_in_bfloat16_without_a_scaler(tmp_path, hook):
    model = Dtypes()
    runner = make_runner(tmp_path, hook, model=model, max_epochs=3)
    runner.train()
    assert runner.grad_scaler is None and set(model.seen) == {torch.bfloat16}
    assert torch.isfinite(torch.tensor(runner.message_hub.latest("train/loss")))
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_bad_arguments_are_config_errors():
    for kwargs in (dict(grad_clip={"max_norm": 1, "max_value": 1}), dict(grad_clip={"norm": 1}),
                   dict(grad_clip=1.0), dict(accumulate=0), dict(accumulate=True),
                   dict(loss_scale="auto"), dict(loss_scale=-1.0),
                   dict(loss_scale={"init_scale": 2.0, "mode": "dynamic"})):
        with pytest.raises(ConfigError):
            OptimizerHook(**kwargs)
    assert HOOKS.build({"type": "Fp16OptimizerHook", "loss_scale": 512.0, "coalesce": True,
                        "bucket_size_mb": -1, "distributed": True}).loss_scale == 512.0


# -- CUDA: GradScaler ----------------------------------------------------------------------

@needs_cuda
def test_cuda_dynamic_loss_scale_state_round_trips_through_a_checkpoint(tmp_path):
    hook = OptimizerHook(amp=True, loss_scale={"init_scale": 2.0 ** 10, "growth_interval": 3})
    runner = make_runner(tmp_path, hook, max_epochs=1, device="cuda",
                         checkpoint={"type": "CheckpointHook"})
    runner.train()
    scale = runner.grad_scaler.get_scale()
    assert scale > 2.0 ** 10  # grew every 3 finite steps
    saved = torch.load(tmp_path / "epoch_1.pth", weights_only=True)["grad_scaler"]
    assert saved["scale"] == scale
    # a run resumed at its end: the hook builds the scaler in before_run, the resume fills it
    resumed = make_runner(tmp_path, OptimizerHook(amp=True, loss_scale="dynamic"), max_epochs=1,
                          device="cuda", resume=tmp_path / "epoch_1.pth")
    resumed.train()
    assert resumed.grad_scaler.get_scale() == scale
    assert resumed.grad_scaler.state_dict()["_growth_tracker"] == saved["_growth_tracker"]


@needs_cuda
def test_cuda_resume_restores_the_scaler_in_a_real_resumed_run(tmp_path):
    hook = OptimizerHook(amp=True, loss_scale={"init_scale": 2.0 ** 8, "growth_interval": 2})
    full = make_runner(tmp_path / "full", hook, max_epochs=2, device="cuda",
                       checkpoint={"type": "CheckpointHook"})
    full.train()
    resumed = make_runner(tmp_path / "r", OptimizerHook(amp=True, loss_scale={
        "init_scale": 2.0 ** 8, "growth_interval": 2}), max_epochs=2, device="cuda",
        resume=tmp_path / "full" / "epoch_1.pth")
    resumed.train()
    assert resumed.grad_scaler.get_scale() == full.grad_scaler.get_scale()
    assert_same_weights(full.model, resumed.model)


@needs_cuda
def test_cuda_static_loss_scale_never_changes(tmp_path):
    runner = make_runner(tmp_path, Fp16OptimizerHook(loss_scale=512.0), max_epochs=2,
                         device="cuda")
    runner.train()
    assert runner.grad_scaler.get_scale() == 512.0


@needs_cuda
def test_cuda_clipping_sees_unscaled_gradients(tmp_path):
    record = GradNorm()
    runner = make_runner(tmp_path, Fp16OptimizerHook(loss_scale=1024.0,
                                                     grad_clip={"max_norm": 1e6}),
                         max_iters=1, device="cuda", hooks=[record])
    runner.train()
    model = copy.deepcopy(net())
    x, y = next(iter(DataLoader(dataset(), batch_size=4)))
    torch.nn.functional.cross_entropy(model(x), y).backward()
    expected = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()]).item()
    # float16 autocast vs float32: close; a scaled norm would be ~1024 times larger
    assert record.norms[0] == pytest.approx(expected, rel=2e-2)
