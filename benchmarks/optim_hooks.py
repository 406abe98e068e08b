"""What the optimizer wrapper, LrUpdaterHook and MomentumUpdaterHook cost per iteration.

Measures, on CPU (and CUDA when available), each one's per-iteration
cost against the plain PyTorch code doing the same work:

* ``OptimWrapper.update_params`` under ``optim_context`` (backward, step,
  zero_grad; plain and with ``accumulative_counts=4`` + ``clip_grad``), what
  the train loop runs each iteration, against ``loss.backward();
  opt.step(); opt.zero_grad()`` on an MLP of 0.3M parameters;
* ``LrUpdaterHook.after_train_iter`` (cosine per iteration with linear
  warm-up: two torch schedulers on shadow optimizers, then the product into
  the real one) against a ``ChainedScheduler([LinearLR, CosineAnnealingLR])``
  stepped by hand on the real optimizer;
* ``MomentumUpdaterHook.before_train_iter`` (closed-form one-cycle momentum)
  against torch ``OneCycleLR(cycle_momentum=True).step()``.

Each figure is the best of ``--repeat`` timings.

    .venv/bin/python benchmarks/optim_hooks.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import platform
import timeit
from types import SimpleNamespace

import torch
from torch.optim import lr_scheduler as ts

from hookline.engine import OptimWrapper
from hookline.engine.message_hub import MessageHub
from hookline.hooks import LrUpdaterHook, MomentumUpdaterHook

STEPS = 2_000


def best_us(fn, repeat: int, number: int) -> float:
    return min(timeit.repeat(fn, number=1, repeat=repeat)) / number * 1e6


def fake_runner(optimizer, device, total: int = 10**6) -> SimpleNamespace:
    loader = [None] * 100
    return SimpleNamespace(optimizer=optimizer, device=torch.device(device), iter=0, epoch=0,
                           by_epoch=False, max_epochs=None, max_iters=total,
                           train_dataloader=loader,
                           message_hub=MessageHub(), grad_scaler=None, autocast=None,
                           logger=None)


def optimizer_step(device: str, repeat: int, number: int = 200) -> dict[str, float]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 256)).to(device)
    x = torch.randn(64, 256, device=device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def plain():
        for _ in range(number):
            model(x).square().mean().backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        sync()

    def wrapped(wrapper):
        wrapper.message_hub = MessageHub()
        wrapper.initialize_count_status(model, 0, 10**9)

        def run():
            for _ in range(number):
                with wrapper.optim_context(model):
                    loss = model(x).square().mean()
                wrapper.update_params(loss)
            sync()
        return run

    return {"plain backward/step/zero_grad": best_us(plain, repeat, number),
            "OptimWrapper.update_params": best_us(wrapped(OptimWrapper(optimizer)), repeat, number),
            "OptimWrapper(accumulative_counts=4, clip_grad).update_params": best_us(
                wrapped(OptimWrapper(optimizer, accumulative_counts=4,
                                     clip_grad={"max_norm": 1.0})), repeat, number)}


def schedules(repeat: int) -> dict[str, float]:
    def new_optimizer():
        params = [torch.nn.Parameter(torch.zeros(1)) for _ in range(4)]
        return torch.optim.SGD([{"params": [p]} for p in params], lr=0.1, momentum=0.9)

    def torch_chained():
        opt = new_optimizer()
        sched = ts.ChainedScheduler([ts.LinearLR(opt, 0.1, total_iters=500),
                                     ts.CosineAnnealingLR(opt, T_max=10**6)])
        opt.step()
        return lambda: [sched.step() for _ in range(STEPS)]

    def lr_hook():
        opt = new_optimizer()
        runner = fake_runner(opt, "cpu")
        hook = LrUpdaterHook(policy="cosine", by_epoch=False, warmup="linear", warmup_iters=500)
        hook.before_run(runner)
        return lambda: [hook.after_train_iter(runner, 0) for _ in range(STEPS)]

    def torch_onecycle():
        opt = new_optimizer()
        sched = ts.OneCycleLR(opt, 0.5, total_steps=10**6, cycle_momentum=True)
        opt.step()
        return lambda: [sched.step() for _ in range(STEPS)]

    def momentum_hook():
        opt = new_optimizer()
        runner = fake_runner(opt, "cpu")
        hook = MomentumUpdaterHook(policy="onecycle")
        hook.before_run(runner)
        hook.before_train(runner)

        def run():
            for i in range(STEPS):
                runner.iter = i
                hook.before_train_iter(runner, i)
        return run

    return {name: best_us(make(), repeat, STEPS) for name, make in (
        ("torch ChainedScheduler(LinearLR, CosineAnnealingLR).step()", torch_chained),
        ("LrUpdaterHook(cosine, warmup=linear).after_train_iter", lr_hook),
        ("torch OneCycleLR(cycle_momentum=True).step()", torch_onecycle),
        ("MomentumUpdaterHook(onecycle).before_train_iter", momentum_hook))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"python {platform.python_version()}, torch {torch.__version__}, 1 torch thread, "
          f"best of {args.repeat}; 4 param groups for the schedules")
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        for name, us in optimizer_step(device, args.repeat).items():
            print(f"{device:4}  {name:<60} {us:8.1f} us/iter")
    for name, us in schedules(args.repeat).items():
        print(f"cpu   {name:<60} {us:8.1f} us/iter")


if __name__ == "__main__":
    main()
