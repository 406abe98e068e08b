"""Resume time against the position in a 1,000,000-sample epoch: hookline, MMEngine, Lightning.

The epoch: a map-style dataset of 1,000,000 samples whose ``__getitem__``
builds a small tensor (32 floats; sample ``i`` carries ``i / 1e6`` in its first
feature, so every batch says which samples it holds), batch 32, shuffled by
each framework's own seeded sampler: 31,250 iterations an epoch;
Linear(32, 64)-ReLU-Linear(64, 10), SGD, one thread, ``num_workers=0``.

For each contender, one *prepare* run trains the epoch up to 90% with each
framework's own periodic checkpoint every 3,125 iterations (hookline's and
MMEngine's ``CheckpointHook(by_epoch=False, interval=3125)``, Lightning's
``ModelCheckpoint(every_n_train_steps=3125)``) and records which samples the
uninterrupted run's batches 0, 3,125, 15,625 and 28,125 hold. Then, in fresh
processes, a run resumes from the checkpoint at 10%, 50% and 90% of the
epoch (0%: a fresh start, no checkpoint): the time from the training call
(``runner.train()``, ``trainer.fit(ckpt_path=...)``) to the first training
step after the resume (the ``before_train_iter`` hook /
``on_train_batch_start`` callback, which then ends the run), in wall and
process CPU time, and how many samples were read in that span.

Contenders (each skipped, with a line, when not installed):

* ``hookline``: ``Runner(max_epochs=1, resume=PATH)``, default hooks;
* ``mmengine-iter``: ``IterBasedTrainLoop`` (``max_iters=31250``), a
  ``DefaultSampler(shuffle=True, seed=0)``, ``Runner(resume=True, load_from=PATH)``
  (run with ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1``: MMEngine 0.10.7 cannot load
  its own checkpoints under torch >= 2.6's ``weights_only=True`` default);
* ``mmengine-epoch``: the same with ``EpochBasedTrainLoop`` (``max_epochs=1``);
* ``lightning``: ``Trainer(max_epochs=1)``, ``DataLoader(shuffle=True)``
  after ``seed_everything(0)``, ``fit(..., ckpt_path=PATH)``.

    .venv-bench/bin/python benchmarks/resume_position.py [--repeat 3] [--only hookline ...]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _subprocess import importable, machine_line, report, run_worker, version
from _workloads import lightning_classifier

SAMPLES, BATCH, FEATURES = 1_000_000, 32, 32
ITERS = SAMPLES // BATCH  # 31,250
INTERVAL = ITERS // 10  # a checkpoint every 10% of the epoch
POSITIONS = (0, INTERVAL, 5 * INTERVAL, 9 * INTERVAL)
CONTENDERS = ("hookline", "mmengine-iter", "mmengine-epoch", "lightning")
PACKAGES = {"hookline": "hookline", "mmengine": "mmengine", "lightning": "lightning"}
LR = 0.01


class Finished(Exception):
    """Raised by a probe once it has what it measures: ends the run there."""


# -- the workload (built in the worker processes only) ------------------------------------------
def make_data(torch):
    """The dataset class (so that no module-level torch import is needed) and the model."""

    class Synthetic(torch.utils.data.Dataset):
        reads = 0

        def __len__(self) -> int:
            return SAMPLES

        def __getitem__(self, index: int):
            Synthetic.reads += 1
            x = torch.linspace(-1, 1, FEATURES).mul_((index % 997) / 997)
            x[0] = index / SAMPLES  # which sample this is, read back by sample_ids()
            return x, index % 10

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 10))
    return Synthetic, model


def sample_ids(inputs) -> list[int]:
    return (inputs[:, 0] * SAMPLES).round().long().tolist()


class Recorder:
    """What the runs record: the samples of chosen batches (prepare), the first step (resume)."""

    def __init__(self, dataset_cls, stop_after: int | None) -> None:
        self.dataset_cls, self.stop_after = dataset_cls, stop_after
        self.batches: dict[int, list[int]] = {}
        self.reached: dict[int, float] = {}  # prepare: seconds from the start to batch k
        self.first: dict | None = None
        self.start = (0.0, 0.0, 0)

    def begin(self) -> None:
        self.start = (time.perf_counter(), time.process_time(), self.dataset_cls.reads)

    def step(self, batch_idx: int, inputs) -> bool:
        """Called before each training step; True: the run should stop now."""
        if self.stop_after is None:  # a resumed run: its first step is what is measured
            wall, cpu, reads = self.start
            self.first = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                          "reads": self.dataset_cls.reads - reads, "counter": batch_idx,
                          "ids": sample_ids(inputs)}
            return True
        if batch_idx in POSITIONS:
            self.batches[batch_idx] = sample_ids(inputs)
            self.reached[batch_idx] = time.perf_counter() - self.start[0]
        return batch_idx >= self.stop_after


def run_hookline(folder: Path, resume: Path | None, recorder_args) -> Recorder:
    import torch  # noqa: PLC0415

    from hookline import Hook, Runner  # noqa: PLC0415

    dataset_cls, model = make_data(torch)
    recorder = Recorder(dataset_cls, *recorder_args)

    class Probe(Hook):
        def before_train_iter(self, runner, batch_idx, data_batch=None):
            if recorder.step(batch_idx, data_batch[0]):
                if recorder.stop_after is None:
                    raise Finished
                runner.stop_training = True

    loader = torch.utils.data.DataLoader(dataset_cls(), batch_size=BATCH, shuffle=True)
    runner = Runner(model, optimizer={"type": "SGD", "lr": LR},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1, train_dataloader=loader,
                    work_dir=folder, device="cpu", resume=resume, hooks=[Probe()],
                    default_hooks={"checkpoint": {"by_epoch": False, "interval": INTERVAL}})
    runner.logger.setLevel(logging.WARNING)
    recorder.begin()
    try:
        runner.train()
    except Exception:
        if recorder.first is None:
            raise
    return recorder


def run_mmengine(by_epoch: bool, folder: Path, resume: Path | None, recorder_args) -> Recorder:
    import torch  # noqa: PLC0415
    from mmengine.dataset import DefaultSampler  # noqa: PLC0415
    from mmengine.hooks import Hook  # noqa: PLC0415
    from mmengine.model import BaseModel  # noqa: PLC0415
    from mmengine.runner import Runner  # noqa: PLC0415

    dataset_cls, net = make_data(torch)
    recorder = Recorder(dataset_cls, *recorder_args)

    class Wrapped(BaseModel):
        def __init__(self) -> None:
            super().__init__()
            self.net = net
            self.loss_fn = torch.nn.CrossEntropyLoss()

        def forward(self, inputs, targets, mode="loss"):  # noqa: ARG002 - MMEngine passes mode
            return {"loss": self.loss_fn(self.net(inputs), targets)}

    class Probe(Hook):
        def before_train_iter(self, runner, batch_idx, data_batch=None):  # noqa: ARG002
            if recorder.step(batch_idx, data_batch["inputs"]):
                raise Finished  # MMEngine's epoch loop checks stop_training between epochs only

    def collate(batch):
        inputs, targets = torch.utils.data.default_collate(batch)
        return {"inputs": inputs, "targets": targets}

    dataset = dataset_cls()
    loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, collate_fn=collate,
                                         sampler=DefaultSampler(dataset, shuffle=True, seed=0))
    train_cfg = {"by_epoch": True, "max_epochs": 1} if by_epoch else \
        {"by_epoch": False, "max_iters": ITERS}
    runner = Runner(model=Wrapped(), work_dir=str(folder), train_dataloader=loader,
                    optim_wrapper={"optimizer": {"type": "SGD", "lr": LR}}, train_cfg=train_cfg,
                    default_hooks={"checkpoint": {"type": "CheckpointHook", "by_epoch": False,
                                                  "interval": INTERVAL}},
                    custom_hooks=[Probe()], log_processor={"by_epoch": by_epoch},
                    env_cfg={"cudnn_benchmark": False, "dist_cfg": {"backend": "gloo"}},
                    resume=resume is not None, load_from=None if resume is None else str(resume),
                    randomness={"seed": 0}, default_scope=None, log_level="WARNING")
    recorder.begin()
    try:
        runner.train()
    except Finished:
        pass
    return recorder


def run_lightning(folder: Path, resume: Path | None, recorder_args) -> Recorder:
    import lightning  # noqa: PLC0415
    import torch  # noqa: PLC0415

    lightning.seed_everything(0, verbose=False)
    dataset_cls, net = make_data(torch)
    recorder = Recorder(dataset_cls, *recorder_args)

    class Probe(lightning.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):  # noqa: ARG002
            if recorder.step(batch_idx, batch[0]) and recorder.stop_after is None:
                raise Finished

    checkpoints = lightning.pytorch.callbacks.ModelCheckpoint(
        dirpath=folder, filename="{step}", every_n_train_steps=INTERVAL, save_top_k=-1)
    stop = recorder.stop_after
    trainer = lightning.Trainer(max_epochs=1, max_steps=-1 if stop is None else stop + 1,
                                default_root_dir=folder, accelerator="cpu", devices=1,
                                enable_progress_bar=False, log_every_n_steps=10,
                                callbacks=[checkpoints, Probe()])
    loader = torch.utils.data.DataLoader(dataset_cls(), batch_size=BATCH, shuffle=True)
    recorder.begin()
    try:
        trainer.fit(lightning_classifier(net, LR), loader,
                    ckpt_path=None if resume is None else str(resume))
    except Finished:
        pass
    return recorder


def run(name: str, folder: Path, resume: Path | None, recorder_args) -> Recorder:
    if name == "hookline":
        return run_hookline(folder, resume, recorder_args)
    if name == "lightning":
        return run_lightning(folder, resume, recorder_args)
    return run_mmengine(name == "mmengine-epoch", folder, resume, recorder_args)


def checkpoint_at(name: str, folder: Path, position: int) -> Path:
    """The file the prepare run of ``name`` wrote after ``position`` iterations."""
    pattern = f"step={position}.ckpt" if name == "lightning" else f"iter_{position}.pth"
    found = list(folder.rglob(pattern))
    if len(found) != 1:
        raise RuntimeError(f"{name}: expected one {pattern} in {folder}, found {found}")
    return found[0]


def worker(args: argparse.Namespace) -> None:
    warnings.filterwarnings("ignore")
    for name in ("lightning", "lightning.pytorch", "mmengine"):
        logging.getLogger(name).setLevel(logging.ERROR)
    folder = Path(args.folder)
    if args.prepare:
        recorder = run(args.worker, folder / "prepare", None, (POSITIONS[-1],))
        for position in POSITIONS[1:]:
            checkpoint_at(args.worker, folder / "prepare", position)
        report({"batches": recorder.batches, "reached": recorder.reached})
        return
    resume = checkpoint_at(args.worker, folder / "prepare", args.position) \
        if args.position else None
    with tempfile.TemporaryDirectory(dir=folder) as run_dir:
        recorder = run(args.worker, Path(run_dir), resume, (None,))
    if recorder.first is None:
        raise RuntimeError(f"{args.worker}: the resumed run never reached a training step")
    report(recorder.first)


# -- the driver ---------------------------------------------------------------------------------
def env_for(name: str) -> dict[str, str]:
    """MMEngine 0.10.7 resumes with ``torch.load(path)``, which torch >= 2.6 makes
    ``weights_only=True``: its own checkpoints (they hold a ``HistoryBuffer``) then fail to
    load. torch's documented switch back to full unpickling lets it resume at all."""
    return {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"} if name.startswith("mmengine") else {}


def prepare(name: str, folder: Path) -> dict[str, dict]:
    """Run (or, with ``--cache``, reuse) the prepare run of ``name`` into ``folder``: the
    samples of its batches at the positions, and when it reached them."""
    done = folder / "prepared.json"
    if done.exists():
        return json.loads(done.read_text())
    started = time.perf_counter()
    prepared = run_worker([sys.executable, __file__, "--worker", name, "--prepare", "--folder",
                           str(folder)], timeout=3600, env=env_for(name))
    done.write_text(json.dumps(prepared))
    print(f"  prepared {name} in {time.perf_counter() - started:.0f} s", file=sys.stderr,
          flush=True)
    return prepared


def which_batch(ids: list[int], batches: dict[str, list[int]], position: int) -> str:
    if ids == batches[str(position)]:
        return f"{position:,} (where it stopped)" if position else "0 (a fresh start)"
    if ids == batches["0"]:
        return "0 (the epoch again)"
    return "another (a new shuffle)"


def back_at(first: dict, prepared: dict, position: int, wall: float) -> str:
    """When the resumed run trains the batch it stopped before, in seconds from the call."""
    batches = prepared["batches"]
    if first["ids"] == batches[str(position)]:
        return f"{wall:.3f}"
    if first["ids"] == batches["0"] and first["counter"] == 0:  # the epoch is trained again
        return (f"~{wall + prepared['reached'][str(position)]:.1f} (trains {position:,} "
                "iterations again)")
    return (f"never (batches from 0 again, counted from {first['counter']:,}: the epoch's "
            f"last {position:,} batches not trained)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="resumed runs per position")
    parser.add_argument("--only", nargs="+", choices=CONTENDERS, help="run only these")
    parser.add_argument("--cache", help="keep the prepare runs' checkpoints in this folder and "
                                        "reuse them on the next run (default: a temp folder)")
    parser.add_argument("--worker", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--position", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    wanted = args.only or CONTENDERS
    names = [n for n in wanted if importable(n.partition("-")[0])]
    print(machine_line())
    print(f"epoch: {SAMPLES:,} samples, batch {BATCH} = {ITERS:,} iterations; MLP 32-64-10, "
          "SGD, 1 thread, num_workers=0; resumed from each framework's checkpoint at the "
          f"position ({args.repeat} runs each, one process a run; 0%: a fresh start)")
    print(f"command: .venv-bench/bin/python benchmarks/resume_position.py --repeat {args.repeat}")
    for name in wanted:
        if name not in names:
            print(f"not installed, skipped: {name}")
    results: dict[tuple[str, int], list[dict]] = {}
    expected: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="hookline-resume-bench-") as scratch:
        root = Path(args.cache or scratch)
        for name in names:
            expected[name] = prepare(name, root / name)
        for r in range(args.repeat):
            for position in POSITIONS:
                for name in (names if r % 2 == 0 else names[::-1]):
                    result = run_worker([sys.executable, __file__, "--worker", name,
                                         "--position", str(position), "--folder",
                                         str(root / name)], timeout=3600, env=env_for(name))
                    results.setdefault((name, position), []).append(result)
                    print(f"  run {r + 1}/{args.repeat} {name:<15} at {position:>6}: "
                          f"{result['wall']:.3f} s", file=sys.stderr, flush=True)
    print("\n| contender | version | position in the epoch | train call -> first step: wall "
          "median s (min) | CPU median s | samples read before the first step | first batch "
          "after resume (of the uninterrupted run) | framework's batch index | back at the "
          "batch where it stopped, s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        for position in POSITIONS:
            runs = results[(name, position)]
            last = runs[-1]
            walls = [run["wall"] for run in runs]
            prepared = expected[name]
            print(f"| {name} | {version(PACKAGES[name.partition('-')[0]])} "
                  f"| {position / ITERS:.0%} (iteration {position:,}) "
                  f"| {statistics.median(walls):.3f} ({min(walls):.3f}) "
                  f"| {statistics.median(run['cpu'] for run in runs):.3f} | {last['reads']:,} "
                  f"| {which_batch(last['ids'], prepared['batches'], position)} "
                  f"| {last['counter']:,} "
                  f"| {back_at(last, prepared, position, statistics.median(walls))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
