"""Mixed precision on a CUDA device: float16 with a GradScaler, bfloat16, and exact resume.

Every test here needs a GPU and skips without one (CI has none). On CPU,
``test_optim_wrapper.py`` covers AmpOptimWrapper's bfloat16 path.
"""

from __future__ import annotations

import os

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline import Hook, Runner
from hookline.engine import AmpOptimWrapper

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))


def _loader() -> DataLoader:
    generator = torch.Generator().manual_seed(3)
    inputs = torch.randn(96, 16, generator=generator)
    targets = (inputs[:, 0] > 0).long() + 2 * (inputs[:, 1] > 0).long()
    return DataLoader(TensorDataset(inputs, targets), batch_size=16, shuffle=True)


def _runner(work_dir, dtype: str = "float16", resume: str | None = None, **kwargs) -> Runner:
    return Runner(
        _mlp(), loss_fn=torch.nn.CrossEntropyLoss(), train_dataloader=_loader(), device="cuda",
        optim_wrapper={"type": "AmpOptimWrapper", "dtype": dtype,
                       "optimizer": {"type": "SGD", "lr": 0.05, "momentum": 0.9}},
        work_dir=work_dir, seed=1, resume=resume,
        default_hooks={"progress": None, "logger": None,
                       "checkpoint": {"interval": 1}}, **kwargs)


class InfGradientAt(Hook):
    """Makes one iteration's gradient infinite, as a float16 overflow would."""

    def __init__(self, iteration: int) -> None:
        self.iteration = iteration
        self.current = -1
        self.scales: list[float] = []

    def before_train(self, runner) -> None:
        runner.model[0].weight.register_hook(self._poison)

    def _poison(self, grad: torch.Tensor) -> torch.Tensor:
        return grad * float("inf") if self.current == self.iteration else grad

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self.current = runner.iter

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        self.scales.append(runner.optim_wrapper.loss_scaler.get_scale())


def test_float16_uses_a_grad_scaler_and_skips_the_step_of_an_inf_gradient(tmp_path):
    poison = InfGradientAt(iteration=3)
    runner = _runner(tmp_path, max_iters=6, hooks=[poison])
    wrapper = runner.optim_wrapper
    assert isinstance(wrapper, AmpOptimWrapper) and wrapper.loss_scaler is not None

    weights: list[torch.Tensor] = []

    class Weights(Hook):
        priority = "LOWEST"

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
            weights.append(runner.model[0].weight.detach().clone())

    runner.register_hook(Weights())
    runner.train()
    assert poison.scales[3] == poison.scales[2] / 2  # backed off at the overflow
    assert torch.equal(weights[3], weights[2])       # and that step was skipped
    assert not torch.equal(weights[4], weights[3])   # training goes on
    assert runner.model[0].weight.dtype == torch.float32  # master weights stay float32


def test_bfloat16_autocasts_without_a_scaler(tmp_path):
    runner = _runner(tmp_path, dtype="bfloat16", max_iters=2)
    wrapper = runner.optim_wrapper
    assert wrapper.loss_scaler is None
    with wrapper.optim_context(runner.model):
        out = runner.model(torch.randn(4, 16, device="cuda"))
    assert out.dtype == torch.bfloat16
    runner.train()
    assert runner.iter == 2


@pytest.fixture
def deterministic():
    before = torch.are_deterministic_algorithms_enabled()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(before)


def test_float16_resume_is_exact_scaler_state_included(tmp_path, deterministic):
    straight = _runner(tmp_path / "straight", max_epochs=4)
    straight.train()

    first = _runner(tmp_path / "stopped", max_epochs=2)
    first.train()
    saved_scale = first.optim_wrapper.loss_scaler.get_scale()
    resumed = _runner(tmp_path / "stopped", max_epochs=4, resume="auto")
    resumed.train()

    assert resumed.iter == straight.iter == 24
    assert saved_scale > 0
    assert (resumed.optim_wrapper.loss_scaler.state_dict()
            == straight.optim_wrapper.loss_scaler.state_dict())
    for key, value in straight.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[key], value), key
