"""What EMAHook, CheckInvalidLossHook, ClosureHook and KerasCallback cost per iteration.

Measures, on the machine it runs on (CPU, and CUDA too when available):

* dispatching ``after_train_iter`` through ``HookTable.call`` to one hook:
  a ``Hook`` subclass, a ``ClosureHook`` (plain, and with ``every=10``) and a
  ``KerasCallback`` overriding ``on_train_batch_end`` without reading ``logs``
  (microseconds per iteration, the hook's own work included);
* ``CheckInvalidLossHook.after_train_iter`` with ``interval=1`` (a read every
  iteration) and ``interval=100`` (device-side folding only);
* ``EMAHook.update`` against ``AveragedModel.update_parameters`` on an MLP
  with 1.1M parameters (the same arithmetic; the hook skips the per-call copy
  of ``n_averaged`` to the device, a host-device sync on CUDA).

Each figure is the best of ``--repeat`` timings (the least disturbed by other
load on the machine).

    .venv/bin/python benchmarks/hook_families.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import timeit
from types import SimpleNamespace

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs
from hookline import Hook
from hookline.engine.hook_table import HookTable
from hookline.hooks import CheckInvalidLossHook, ClosureHook, EMAHook, KerasCallback


class Noop(Hook):
    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        pass


class KerasNoop(KerasCallback):
    def on_train_batch_end(self, batch, logs=None) -> None:
        pass


def per_call_us(hook: Hook, outputs: dict, repeat: int, number: int = 20_000) -> float:
    table = HookTable()
    table.add(hook)
    runner = SimpleNamespace(iter=0, max_iters=10**9, epoch=0, max_epochs=None)
    call = table.call

    def step():
        call(runner, "after_train_iter", batch_idx=0, data_batch=None, outputs=outputs)
        runner.iter += 1

    sync = torch.cuda.synchronize if outputs["loss"].is_cuda else (lambda: None)

    def run():
        for _ in range(number):
            step()
        sync()

    return min(timeit.repeat(run, number=1, repeat=repeat)) / number * 1e6


def ema_ms(device: str, repeat: int, number: int = 50) -> tuple[float, float]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 512)).to(device)
    hook = EMAHook(decay=0.999)
    hook.before_run(SimpleNamespace(model=model))
    hook.update(model)  # the first, copying step
    reference = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
    reference.update_parameters(model)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def run(update):
        for _ in range(number):
            update(model)
        sync()

    ours, torchs = [], []
    for _ in range(repeat):  # interleaved, so both see the same machine load
        ours.append(timeit.timeit(lambda: run(hook.update), number=1))
        torchs.append(timeit.timeit(lambda: run(reference.update_parameters), number=1))
    return min(ours) / number * 1e3, min(torchs) / number * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"# {cpu_model()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    for device in devices:
        loss = torch.tensor(0.5, device=device)
        outputs = {"loss": loss}
        rows = [
            ("Hook subclass, no-op", Noop()),
            ("ClosureHook (no filter)", ClosureHook("after_train_iter", lambda _runner, **kw: None)),
            ("ClosureHook (every=10)",
             ClosureHook("after_train_iter", lambda _runner, **kw: None, every=10)),
            ("KerasCallback.on_train_batch_end (logs unread)", KerasNoop()),
            ("CheckInvalidLossHook(interval=1)", CheckInvalidLossHook(1)),
            ("CheckInvalidLossHook(interval=100)", CheckInvalidLossHook(100)),
        ]
        print(f"\n{device}: after_train_iter dispatch, microseconds per iteration")
        for name, hook in rows:
            print(f"  {name:<48} {per_call_us(hook, outputs, args.repeat):8.2f}")
        ours, torchs = ema_ms(device, args.repeat)
        print(f"{device}: EMA update of a 1.1M-parameter MLP, ms per update")
        print(f"  {'EMAHook.update':<48} {ours:8.3f}")
        print(f"  {'AveragedModel.update_parameters':<48} {torchs:8.3f}")


if __name__ == "__main__":
    main()
