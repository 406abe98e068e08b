"""Training-loop overhead: the hookline Runner against a plain PyTorch loop (and others).

The default workload (``--workload mlp``) is small on purpose, so that what a
training framework adds per iteration shows: Linear(32, 64)-ReLU-Linear(64, 10)
on 8,192 synthetic samples, batch 32 (256 iterations an epoch), 4 epochs =
1,024 iterations, SGD, CrossEntropyLoss, one thread, a shuffling DataLoader.
``--workload resnet18`` trains a ResNet-18-shaped CNN at batch 128 instead
(``_workloads.py``); ``--hidden N`` widens the MLP's hidden layer (64 by
default), for how the same hooks compare with a bigger step. ``--device
cuda`` runs every contender on the GPU: the loader pins memory, batches move
with ``non_blocking=True``, and each timed span ends with
``torch.cuda.synchronize()``; ``--device cpu`` hides any GPU
(``CUDA_VISIBLE_DEVICES=""``), so that no framework picks one on its own.

Contenders, each run in its own fresh subprocess, round-robin (the order is
reversed on every other repeat), ``--repeat`` times:

* ``plain``: ``for x, y in loader: zero_grad(); loss = loss_fn(model(x), y);
  backward(); step()``;
* ``plain-prebatched``: the same loop over batches cut before the timed span
  (one shuffle, ``tensor.split``, reused every epoch): the floor, a training
  step with no data cost at all;
* ``hookline``: ``Runner(..., fast_data=False).train()`` with its default
  hooks (scheduler, timer, logger every 10 iterations to the console, log.txt
  and metrics.jsonl, a checkpoint every epoch to a temporary directory,
  sampler seed; no progress bar, as stderr is not a terminal). Its batches
  come from the DataLoader's own iterator, like ``plain``'s: like for like;
* ``hookline-fast-data``: the same with the fast data path on (the default:
  batches by indexing the TensorDataset's tensors with the sampler's indices,
  the DataLoader's batches bit for bit);
* ``hookline-lean``: ``hookline`` without the logger, timer and checkpoint
  hooks (what the per-iteration path itself costs; DataLoader batches);
* ``ignite``: ``create_supervised_trainer(...).run(loader, max_epochs=4)``;
* ``mmengine``: ``mmengine.runner.Runner`` with its default hooks (logger
  every 10 iterations, a checkpoint every epoch);
* ``mmengine-lean``: the same without its logger, timer and checkpoint hooks;
* ``lightning``: ``Trainer(max_epochs=4)`` with its defaults (a logger, a
  checkpoint callback, the model summary) but no progress bar, with
  ``self.log("loss", loss)`` and ``log_every_n_steps=10``;
* ``lightning-bare``: ``logger=False``, no checkpointing, no model summary.

The Ignite, MMEngine and Lightning rows run only when installed (``make
bench`` installs them into ``.venv-bench``). The timed span is the training
call (``train()``, ``run()``, ``fit()``); building the model, data and
trainer is outside it. Each run reports its wall time and its process CPU
time (the latter is less disturbed when other work shares the machine).
Reported: medians and the wall minimum, and each median over the plain loop's.

    .venv-bench/bin/python benchmarks/runner_overhead.py [--repeat 5] [--quick]
    .venv-bench/bin/python benchmarks/runner_overhead.py --device cuda --workload resnet18
    .venv-bench/bin/python benchmarks/runner_overhead.py --hidden 1024 --only plain hookline
    .venv-bench/bin/python benchmarks/runner_overhead.py --profile-hookline
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

from _machine import cpu_model  # benchmarks/ is on sys.path when a script here runs
from _workloads import WORKLOADS, Workload, build_model, lightning_classifier

LR = 0.01
CONTENDERS = ("plain", "plain-prebatched", "hookline", "hookline-fast-data", "hookline-lean",
              "ignite", "mmengine", "mmengine-lean", "lightning", "lightning-bare")
PACKAGES = {"hookline": "hookline", "ignite": "pytorch-ignite", "mmengine": "mmengine",
            "lightning": "lightning"}


# -- the workload (imported in the worker only) -----------------------------------------------
# Each framework (torch included) is imported in the worker process that runs it, and only
# there: the driver stays light, and a framework that is not installed is skipped.
@dataclass(frozen=True)
class Spec:
    """What one worker trains: the workload, how many samples, on which device."""
    workload: Workload
    samples: int
    device: str

    @property
    def epochs(self) -> int:
        return self.workload.epochs

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")


def make_workload(spec: Spec):
    import torch  # noqa: PLC0415
    from torch.utils.data import DataLoader, TensorDataset  # noqa: PLC0415

    torch.set_num_threads(1)
    torch.manual_seed(0)
    shape = spec.workload.input_shape
    data = TensorDataset(torch.randn(spec.samples, *shape), torch.randint(0, 10, (spec.samples,)))
    model = build_model(torch, spec.workload)
    loader = DataLoader(data, batch_size=spec.workload.batch, shuffle=True, pin_memory=spec.cuda)
    return torch, data, model, loader


def timed(train: Callable[[], object], spec: Spec) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of ``train()``; on CUDA, until the GPU is done."""
    started_us = int(time.time() * 1e6)
    wall, cpu = time.perf_counter(), time.process_time()
    train()
    if spec.cuda:
        import torch  # noqa: PLC0415

        torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if spec.cuda:
        GPU_BUSY.append(gpu_utilisation(spec.device, started_us))
    return wall, cpu


GPU_BUSY: list[float | None] = []  # the worker's reading of the GPU's utilisation, if any


def gpu_utilisation(device: str, since_us: int) -> float | None:
    """The mean of the GPU-utilisation samples NVML took since ``since_us`` (percent of
    time a kernel ran), read after the timed span so that nothing polls during it; None
    where NVML (the ``nvidia-ml-py`` package) is missing or keeps no samples."""
    try:
        import pynvml  # noqa: PLC0415

        pynvml.nvmlInit()
        index = int(device.partition(":")[2] or 0)
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        _, samples = pynvml.nvmlDeviceGetSamples(handle, pynvml.NVML_GPU_UTILIZATION_SAMPLES,
                                                 since_us)
        values = [s.sampleValue.uiVal for s in samples if s.timeStamp >= since_us]
        return statistics.mean(values) if values else None
    except Exception:  # a missing reading leaves the column empty
        return None


# The runners share one signature (RUNS): not every one uses each argument. ``variant`` is
# what follows the first "-" of the contender's name ("" for the base one).
def run_plain(spec: Spec, work_dir: str, variant: str) -> tuple[float, float, int]:  # noqa: ARG001
    torch, data, model, loader = make_workload(spec)
    device = torch.device(spec.device)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = torch.nn.CrossEntropyLoss()
    iters = 0
    if variant == "prebatched":  # cut once, before the timed span; reused every epoch
        order = torch.randperm(len(data))
        inputs, targets = (t[order] for t in data.tensors)
        if spec.cuda:
            inputs, targets = inputs.pin_memory(), targets.pin_memory()
        loader = list(zip(inputs.split(spec.workload.batch), targets.split(spec.workload.batch)))

    def train() -> None:
        nonlocal iters
        model.train()
        for _ in range(spec.epochs):
            for inputs, targets in loader:
                inputs = inputs.to(device, non_blocking=True)
                targets = targets.to(device, non_blocking=True)
                optimizer.zero_grad()
                loss = loss_fn(model(inputs), targets)
                loss.backward()
                optimizer.step()
                iters += 1

    return (*timed(train, spec), iters)


def run_hookline(spec: Spec, work_dir: str, variant: str) -> tuple[float, float, int]:
    torch, _, model, loader = make_workload(spec)
    from hookline import Runner  # noqa: PLC0415

    lean = variant == "lean"
    off = {"logger": None, "timer": None, "checkpoint": None} if lean else {}
    runner = Runner(model, optimizer={"type": "SGD", "lr": LR},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=spec.epochs,
                    train_dataloader=loader, work_dir=work_dir, device=spec.device,
                    default_hooks=off, fast_data=variant == "fast-data")
    if os.environ.get("BENCH_HOOK_PROFILE"):
        runner.hooks.start_profiling()
    wall, cpu = timed(runner.train, spec)
    if os.environ.get("BENCH_HOOK_PROFILE"):
        print(f"PROFILE wall {wall:.3f} s, cpu {cpu:.3f} s\n{runner.hook_profile()}")
    written = sorted(name for name in os.listdir(work_dir) if name.endswith(".pth"))
    assert written == ([] if lean else [f"epoch_{e}.pth" for e in range(1, spec.epochs + 1)]), written
    return wall, cpu, runner.iter


def run_ignite(spec: Spec, work_dir: str, variant: str) -> tuple[float, float, int]:  # noqa: ARG001
    torch, _, model, loader = make_workload(spec)
    from ignite.engine import create_supervised_trainer  # noqa: PLC0415

    model.to(spec.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    trainer = create_supervised_trainer(model, optimizer, torch.nn.CrossEntropyLoss(),
                                        device=spec.device, non_blocking=spec.cuda)
    wall, cpu = timed(lambda: trainer.run(loader, max_epochs=spec.epochs), spec)
    return wall, cpu, trainer.state.iteration


def run_mmengine(spec: Spec, work_dir: str, variant: str) -> tuple[float, float, int]:
    torch, data, model, _ = make_workload(spec)
    from mmengine.model import BaseModel  # noqa: PLC0415
    from mmengine.runner import Runner  # noqa: PLC0415

    class Wrapped(BaseModel):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.loss_fn = torch.nn.CrossEntropyLoss()

        def forward(self, inputs, targets, mode="loss"):  # noqa: ARG002 - MMEngine passes mode
            return {"loss": self.loss_fn(self.net(inputs), targets)}

    def collate(batch):
        inputs, targets = torch.utils.data.default_collate(batch)
        return {"inputs": inputs, "targets": targets}

    loader = torch.utils.data.DataLoader(data, batch_size=spec.workload.batch, shuffle=True,
                                         collate_fn=collate, pin_memory=spec.cuda)
    off = {"logger": None, "timer": None, "checkpoint": None} if variant == "lean" else None
    runner = Runner(model=Wrapped(model), work_dir=work_dir, train_dataloader=loader,
                    optim_wrapper={"optimizer": {"type": "SGD", "lr": LR}},
                    train_cfg={"by_epoch": True, "max_epochs": spec.epochs},
                    env_cfg={"cudnn_benchmark": False, "dist_cfg": {"backend": "gloo"}},
                    default_hooks=off, default_scope=None)
    wall, cpu = timed(runner.train, spec)  # MMEngine uses the GPU whenever one is visible
    return wall, cpu, runner.iter


def run_lightning(spec: Spec, work_dir: str, variant: str) -> tuple[float, float, int]:
    torch, _, model, loader = make_workload(spec)
    import lightning  # noqa: PLC0415

    bare = {"logger": False, "enable_checkpointing": False, "enable_model_summary": False}
    trainer = lightning.Trainer(max_epochs=spec.epochs, default_root_dir=work_dir,
                                accelerator="gpu" if spec.cuda else "cpu", devices=1,
                                enable_progress_bar=False,
                                log_every_n_steps=10, **(bare if variant == "bare" else {}))
    module = lightning_classifier(model, LR)
    wall, cpu = timed(lambda: trainer.fit(module, loader), spec)
    return wall, cpu, trainer.global_step


RUNS: dict[str, Callable[[Spec, str, str], tuple[float, float, int]]] = {
    "plain": run_plain, "hookline": run_hookline, "ignite": run_ignite,
    "mmengine": run_mmengine, "lightning": run_lightning,
}


def worker(name: str, spec: Spec) -> None:
    warnings.filterwarnings("ignore")
    logging.getLogger("lightning").setLevel(logging.ERROR)
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    base, _, variant = name.partition("-")
    with tempfile.TemporaryDirectory(prefix=f"bench-{base}-") as work_dir:
        wall, cpu, iters = RUNS[base](spec, work_dir, variant)
    busy = GPU_BUSY[-1] if GPU_BUSY else None
    print("RESULT " + json.dumps({"name": name, "wall": wall, "cpu": cpu, "iters": iters,
                                  "gpu_util": busy}), flush=True)


# -- the driver ---------------------------------------------------------------------------------
def available(name: str) -> bool:
    base = name.partition("-")[0]
    return base in ("plain", "hookline") or importlib.util.find_spec(base) is not None


def run_once(name: str, spec: Spec) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if not spec.cuda:
        env["CUDA_VISIBLE_DEVICES"] = ""  # no framework picks a GPU on its own
    width = ["--hidden", str(spec.workload.hidden)] if spec.workload.name == "mlp" else []
    proc = subprocess.run([sys.executable, __file__, "--worker", name, "--samples",
                           str(spec.samples), "--workload", spec.workload.name, *width,
                           "--device", spec.device],
                          env=env, capture_output=True, text=True, timeout=600)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{name} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n"
                       f"{proc.stderr[-4000:]}")


def machine(device: str) -> str:
    model = cpu_model()
    line = (f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}, "
            f"torch {metadata.version('torch')}")
    if device.startswith("cuda"):
        import torch  # noqa: PLC0415

        line += f", GPU {torch.cuda.get_device_name(torch.device(device))}"
    return line


def version(name: str) -> str:
    try:
        return metadata.version(PACKAGES.get(name.partition("-")[0], "torch"))
    except metadata.PackageNotFoundError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each contender")
    parser.add_argument("--quick", action="store_true",
                        help="an eighth of the samples, 2 repeats, plain, hookline and "
                             "hookline-fast-data only (smoke test)")
    parser.add_argument("--only", nargs="+", choices=CONTENDERS, help="run only these")
    parser.add_argument("--profile-hookline", action="store_true",
                        help="run hookline once with hook profiling on and print where its time "
                             "goes, hook by hook (profiling itself adds ~0.35 us per hook call)")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="mlp",
                        help="mlp (default: overhead-dominated) or resnet18 (batch 128, "
                             "3x64x64 images)")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda / cuda:N")
    parser.add_argument("--hidden", type=int, default=None,
                        help="the mlp workload's hidden width (default 64): a bigger step")
    parser.add_argument("--worker", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--samples", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not (args.device == "cpu" or args.device.startswith("cuda")):
        parser.error(f"--device must be cpu, cuda or cuda:N, got {args.device!r}")
    workload = WORKLOADS[args.workload]
    if args.hidden is not None:
        if args.workload != "mlp" or args.hidden < 1:
            parser.error(f"--hidden takes a positive width for --workload mlp, got "
                         f"{args.hidden} for {args.workload}")
        workload = workload.widened(args.hidden)
    samples = args.samples or (workload.samples // 8 if args.quick else workload.samples)
    spec = Spec(workload, samples, args.device)
    if args.worker:
        worker(args.worker, spec)
        return 0
    if spec.cuda:
        import torch  # noqa: PLC0415

        if not torch.cuda.is_available():
            parser.error("--device cuda: this machine's torch sees no CUDA device")
    if args.profile_hookline:
        env = dict(os.environ, OMP_NUM_THREADS="1", BENCH_HOOK_PROFILE="1")
        proc = subprocess.run([sys.executable, __file__, "--worker", "hookline", "--workload",
                               args.workload, "--device", args.device], env=env,
                              capture_output=True, text=True, timeout=600, check=True)
        print(proc.stdout[proc.stdout.index("PROFILE "):].rsplit("RESULT ", 1)[0])
        return 0
    repeat = 2 if args.quick else args.repeat
    names = [n for n in (args.only or CONTENDERS) if available(n)]
    if args.quick and not args.only:
        names = ["plain", "hookline", "hookline-fast-data"]
    skipped = [n for n in (args.only or CONTENDERS) if n not in names and not args.quick]
    iters = -(-samples // workload.batch) * workload.epochs
    command = ["python", "benchmarks/runner_overhead.py", *(sys.argv[1:] if argv is None else argv)]
    print(f"command: {' '.join(command)}")
    print(f"machine: {machine(args.device)}")
    print(f"workload: {workload.description}; {samples} samples used, {workload.epochs} epochs "
          f"= {iters} iterations on {args.device}, 1 thread; {repeat} runs each, round-robin, "
          "one process a run")
    if skipped:
        print(f"not installed, skipped: {', '.join(skipped)}")
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    busy: dict[str, list[float]] = {n: [] for n in names}  # NVML GPU utilisation, CUDA only
    for r in range(repeat):
        for name in (names if r % 2 == 0 else names[::-1]):
            result = run_once(name, spec)
            if result["iters"] != iters:
                raise RuntimeError(f"{name} ran {result['iters']} iterations, not {iters}")
            walls[name].append(result["wall"])
            cpus[name].append(result["cpu"])
            if result.get("gpu_util") is not None:
                busy[name].append(result["gpu_util"])
            print(f"  run {r + 1}/{repeat} {name:<15} wall {result['wall']:.3f} s  "
                  f"cpu {result['cpu']:.3f} s", flush=True)
    median = statistics.median
    base_wall = median(walls["plain"]) if "plain" in walls else None
    base_cpu = median(cpus["plain"]) if "plain" in cpus else None
    gpu = any(busy.values())
    print("\n| contender | version | wall median s | wall min s | CPU median s | us / iter "
          "| overhead us / iter | x plain (wall) | x plain (CPU) |" + (" GPU util % |" if gpu else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if gpu else ""))
    for name in names:
        wall, cpu = median(walls[name]), median(cpus[name])
        ratios = (f"{wall / base_wall:.3f} | {cpu / base_cpu:.3f}" if base_wall else "- | -")
        over = f"{(wall - base_wall) / iters * 1e6:+.0f}" if base_wall else "-"
        util = (f" {median(busy[name]):.0f} |" if busy[name] else " - |") if gpu else ""
        print(f"| {name} | {version(name)} | {wall:.3f} | {min(walls[name]):.3f} | {cpu:.3f} | "
              f"{wall / iters * 1e6:.0f} | {over} | {ratios} |{util}")
    if base_wall and "hookline" in walls:
        print(f"\nhookline / plain loop = {median(walls['hookline']) / base_wall:.3f} wall, "
              f"{median(cpus['hookline']) / base_cpu:.3f} CPU (target <= 1.05)")
    if base_wall and "hookline-fast-data" in walls:
        print(f"hookline-fast-data / plain loop = "
              f"{median(walls['hookline-fast-data']) / base_wall:.3f} wall, "
              f"{median(cpus['hookline-fast-data']) / base_cpu:.3f} CPU (target < 1.0)")
    return 0

if __name__ == "__main__":
    sys.exit(main())
