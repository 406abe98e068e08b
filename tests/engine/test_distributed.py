"""Multi-process runs: the Runner under ``torchrun --nproc_per_node 2`` on gloo (and a world
of one under ``torchrun --nproc_per_node 1``, on a GPU with nccl where there is one).

Each torchrun test starts real processes (``python -m torch.distributed.run
--standalone``, which picks a free port) running
``dist_scripts/train_ddp.py`` and checks what they wrote.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from hookline.engine import distributed as dist_utils
from hookline.engine.evaluator import Evaluator
from hookline.engine.samplers import EpochSampler

SCRIPT = Path(__file__).parent / "dist_scripts" / "train_ddp.py"

needs_gloo = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="torch.distributed with gloo is not available")


def _script_module():
    spec = importlib.util.spec_from_file_location("hookline_train_ddp", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    return env


def _torchrun_cmd(out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
            "2", str(SCRIPT), "--out", str(out), *args]


def _run(cmd: list[str], out: Path, timeout: float = 90) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout)
    (out / "console.txt").write_text(proc.stdout + proc.stderr)
    return proc


def _results(out: Path, ranks=(0, 1)) -> list[dict]:
    return [json.loads((out / f"result_rank{r}.json").read_text()) for r in ranks]


def _weights(out: Path, rank: int) -> dict[str, torch.Tensor]:
    return torch.load(out / f"weights_rank{rank}.pt", weights_only=True)


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max((a[k] - b[k]).abs().max().item() for k in a)


# -- in-process pieces ---------------------------------------------------------------------
@pytest.mark.parametrize("size,world", [(7, 2), (10, 3), (2, 3), (6, 2)])
def test_eval_sampler_shards_every_sample_once(size, world):
    shards = [list(EpochSampler(range(size), shuffle=True, seed=3, rank=r, world_size=world,
                                pad=False)) for r in range(world)]
    assert sorted(i for shard in shards for i in shard) == list(range(size))
    for rank, shard in enumerate(shards):
        sampler = EpochSampler(range(size), shuffle=True, seed=3, rank=rank, world_size=world,
                               pad=False)
        assert len(sampler) == len(shard)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


@pytest.mark.parametrize("size,world", [(7, 2), (2, 3), (1, 4)])
def test_train_sampler_pads_to_equal_shards(size, world):
    shards = [list(EpochSampler(range(size), shuffle=False, rank=r, world_size=world))
              for r in range(world)]
    assert {len(s) for s in shards} == {-(-size // world)}
    assert set(i for shard in shards for i in shard) == set(range(size))


def test_single_process_helpers_are_no_ops():
    tensor = torch.arange(3.0)
    assert dist_utils.all_gather_object({"a": 1}) == [{"a": 1}]
    assert dist_utils.all_gather_interleave(tensor) is tensor
    assert dist_utils.collective_device() == torch.device("cpu")


def test_evaluator_with_no_batches_gives_no_metrics():
    assert Evaluator({"accuracy": "accuracy"}).compute() == {}


# -- torchrun -------------------------------------------------------------------------------
# The runs of the three tests below that only read what a finished run wrote: a name, the
# per-process batch of the one-process reference (None: no reference) and of each of the two
# ranks, and the other arguments.
SHARED_RUNS = {
    # 96 samples, 3 epochs; one process with batch 8 sees order[0:8] per step, the two
    # ranks with batch 4 see order[0:8:2] and order[1:8:2]: the same samples.
    "global_batch": ("8", "4", ()),
    # 40 samples: 5 batches of 8 an epoch, accumulated in groups of 2, 2 and a last group of 1
    "accumulate": ("8", "4", ("--train-size", "40", "--epochs", "2", "--accumulate", "2")),
    # one validation sample on two ranks
    "no_val_samples": (None, "4", ("--train-size", "16", "--epochs", "1", "--val-size", "1",
                                   "--torchmetrics")),
}


def _start(cmd: list[str], log: Path) -> subprocess.Popen:
    """Start ``cmd``; its stdout and stderr go to ``log``.stdout and ``log``.stderr."""
    with open(log.with_suffix(".stdout"), "w") as out, open(log.with_suffix(".stderr"), "w") as err:
        return subprocess.Popen(cmd, env=_env(), stdout=out, stderr=err, text=True)


def _wait(proc: subprocess.Popen, log: Path, timeout: float = 150) -> subprocess.CompletedProcess:
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode,
                                       log.with_suffix(".stdout").read_text(),
                                       log.with_suffix(".stderr").read_text())


@pytest.fixture(scope="module")
def shared_runs(tmp_path_factory) -> dict[str, tuple]:
    """name -> (single dir, its process, ddp dir, torchrun's process) for SHARED_RUNS.

    One torchrun launch trains all the two-rank runs one after another (train_ddp.py's
    ``--then``) while one plain process trains the one-process references: the processes
    (torch, the rendezvous) start once for all the runs, not once a run."""
    root = tmp_path_factory.mktemp("shared_runs")
    single_runs: list[list[str]] = []
    ddp_runs: list[list[str]] = []
    for name, (single_batch, ddp_batch, args) in SHARED_RUNS.items():
        (root / name / "single").mkdir(parents=True), (root / name / "ddp").mkdir()
        if single_batch is not None:
            single_runs.append(["--out", str(root / name / "single"), "--batch", single_batch,
                                *args])
        ddp_runs.append(["--out", str(root / name / "ddp"), "--batch", ddp_batch, *args])

    def then(runs: list[list[str]]) -> list[str]:
        return [arg for i, run in enumerate(runs) for arg in (["--then"] if i else []) + run]

    one = _start([sys.executable, str(SCRIPT), *then(single_runs)], root / "single")
    two = _start([sys.executable, "-m", "torch.distributed.run", "--standalone",
                  "--nproc_per_node", "2", str(SCRIPT), *then(ddp_runs)], root / "ddp")
    one, two = _wait(one, root / "single"), _wait(two, root / "ddp")
    return {name: (root / name / "single", one, root / name / "ddp", two)
            for name in SHARED_RUNS}


@needs_gloo
@pytest.mark.timeout(180)
def test_two_ranks_match_one_process_with_the_same_global_batch(shared_runs):
    single, one, ddp, two = shared_runs["global_batch"]
    assert one.returncode == 0, one.stdout + one.stderr
    assert two.returncode == 0, two.stdout[-3000:] + two.stderr[-3000:]

    (reference,) = _results(single, ranks=(0,))
    rank0, rank1 = _results(ddp)
    assert (rank0["world_size"], rank1["world_size"]) == (2, 2)
    assert rank0["iter"] == rank1["iter"] == reference["iter"] == 36

    w_single, w0, w1 = _weights(single, 0), _weights(ddp, 0), _weights(ddp, 1)
    assert all(torch.equal(w0[k], w1[k]) for k in w0)  # DDP keeps the ranks identical
    assert _max_diff(w0, w_single) < 1e-5
    assert _max_diff(w0, _script_module().make_model().state_dict()) > 1e-2  # it did train

    # validation: 37 samples, 19 on rank 0 and 18 on rank 1, reduced to the same numbers
    # as one process (no padded duplicate counted twice)
    assert rank0["val"] == rank1["val"]
    assert len(rank0["val"]) == 3
    for got, want in zip(rank0["val"], reference["val"]):
        assert got.keys() == want.keys() == {"loss", "accuracy"}
        assert got["accuracy"] == pytest.approx(want["accuracy"], abs=1e-6)
        assert got["loss"] == pytest.approx(want["loss"], abs=1e-5)
    assert round(rank0["val"][-1]["accuracy"] * 37) == pytest.approx(
        rank0["val"][-1]["accuracy"] * 37, abs=1e-4)  # a count out of 37, not 38

    # only rank 0 writes logs, metrics and checkpoints; rank 1's LoggerHook averages nothing
    assert not (ddp / "work_rank1").exists()
    assert rank0["log_record"]["iter"] == 36 and rank1["log_record"] is None
    work = ddp / "work_rank0"
    assert sorted(p.name for p in work.glob("*.pth")) == ["epoch_1.pth", "epoch_2.pth",
                                                           "epoch_3.pth"]
    records = [json.loads(line) for line in (work / "metrics.jsonl").read_text().splitlines()]
    assert [r["mode"] for r in records].count("train") == 18  # 12 iterations / interval 2, x3
    assert [r["mode"] for r in records].count("val") == 3
    assert (work / "log.txt").read_text().count("Epoch(val) [3]") == 1
    checkpoint = torch.load(work / "epoch_3.pth", weights_only=True)
    assert all(torch.equal(checkpoint["state_dict"][k], w0[k]) for k in w0)  # no "module."

    # every rank waits at the barrier after a save: rank 0 sleeps before writing each
    # checkpoint, yet rank 1 finds the file once save_checkpoint has returned
    assert rank0["saved_before_barrier"] == rank1["saved_before_barrier"] == [True] * 3


@needs_gloo
@pytest.mark.timeout(180)
def test_accumulation_skips_the_all_reduce_on_micro_batches_and_matches_one_process(shared_runs):
    single, one, ddp, two = shared_runs["accumulate"]  # 40 samples, accumulate 2, 2 epochs
    assert one.returncode == 0, one.stdout + one.stderr
    assert two.returncode == 0, two.stdout[-3000:] + two.stderr[-3000:]
    rank0, rank1 = _results(ddp)
    # under DDP only the last micro-batch of each group all-reduces (the others run no_sync)
    assert rank0["grad_sync"] == rank1["grad_sync"] == [False, True, False, True, True] * 2
    (reference,) = _results(single, ranks=(0,))
    assert reference["grad_sync"] == [True] * 10  # one process: nothing to skip
    w_single, w0, w1 = _weights(single, 0), _weights(ddp, 0), _weights(ddp, 1)
    assert all(torch.equal(w0[k], w1[k]) for k in w0)
    assert _max_diff(w0, w_single) < 1e-5


@pytest.mark.timeout(180)
@pytest.mark.parametrize("device", [
    "cpu", pytest.param("cuda", marks=pytest.mark.skipif(
        not (torch.cuda.is_available() and dist.is_available() and dist.is_nccl_available()),
        reason="needs CUDA and nccl (one GPU cannot host two nccl ranks: world size 1)"))])
def test_torchrun_with_one_process_trains_checkpoints_and_resumes(tmp_path, device):
    """``torchrun --nproc_per_node 1``: a world of one trains like a plain process."""
    def torchrun(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
               "1", str(SCRIPT), "--out", str(tmp_path), "--batch", "8", "--device", device, *args]
        proc = _run(cmd, tmp_path)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc

    torchrun("--epochs", "2")
    (first,) = _results(tmp_path, ranks=(0,))
    assert (first["world_size"], first["iter"]) == (1, 24)
    assert first["device"].startswith(device)
    work = tmp_path / "work_rank0"
    assert sorted(p.name for p in work.glob("*.pth")) == ["epoch_1.pth", "epoch_2.pth"]
    torchrun("--epochs", "3", "--resume", "auto")
    (resumed,) = _results(tmp_path, ranks=(0,))
    assert resumed["iter"] == 36 and len(resumed["val"]) == 1  # only epoch 3 ran
    assert "epoch_3.pth" in {p.name for p in work.glob("*.pth")}


@needs_gloo
@pytest.mark.timeout(120)
def test_validation_when_a_rank_has_no_samples(shared_runs):
    """One validation sample on two ranks: rank 1's shard is empty, yet it joins every
    collective (no hang) and reports the same metrics, torchmetrics included."""
    _, _, out, proc = shared_runs["no_val_samples"]  # 16 samples, 1 epoch, 1 val sample
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rank0, rank1 = _results(out)
    assert rank0["val"] == rank1["val"]
    (metrics,) = rank0["val"]

    script = _script_module()
    model = script.make_model()
    model.load_state_dict(_weights(out, 0))
    inputs, targets = script.make_data(1, 1).tensors
    with torch.no_grad():
        preds = model(inputs)
    want_acc = float((preds.argmax(1) == targets).float().mean())
    assert metrics["accuracy"] == metrics["tm_accuracy"] == want_acc
    assert metrics["loss"] == pytest.approx(
        float(torch.nn.functional.cross_entropy(preds, targets)), abs=1e-6)


def _start_slow_job(out: Path, *extra: str) -> subprocess.Popen:
    log = open(out / "console.txt", "w")  # noqa: SIM115  (closed by the caller through proc)
    proc = subprocess.Popen(
        _torchrun_cmd(out, "--batch", "4", "--epochs", "100", "--slow", "0.02", *extra),
        env=_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    proc.log = log  # type: ignore[attr-defined]
    deadline = time.monotonic() + 60
    while not all((out / f"started_rank{r}").exists() for r in (0, 1)):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            log.close()
            pytest.fail("the torchrun job did not start:\n" + (out / "console.txt").read_text())
        time.sleep(0.05)
    return proc


def _finish(proc: subprocess.Popen, out: Path) -> str:
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    proc.log.close()  # type: ignore[attr-defined]
    return (out / "console.txt").read_text()


def _check_stopped_together(out: Path, returncode: int, console: str) -> None:
    assert returncode != 0, console[-3000:]
    rank0, rank1 = _results(out)
    stopped = rank0["iter"]
    assert rank1["iter"] == stopped, console[-3000:]
    assert 0 < stopped < 100 * 12  # mid-run
    w0, w1 = _weights(out, 0), _weights(out, 1)
    assert all(torch.equal(w0[k], w1[k]) for k in w0)
    assert not (out / "work_rank1").exists()
    work = out / "work_rank0"
    assert [p.name for p in work.glob("iter_*.pth")] == [f"iter_{stopped}.pth"]
    checkpoint = torch.load(work / f"iter_{stopped}.pth", weights_only=True)
    assert checkpoint["meta"]["iter"] == stopped
    assert all(torch.equal(checkpoint["state_dict"][k], w0[k]) for k in w0)
    assert (work / "latest").read_text().strip() == f"iter_{stopped}.pth"
    assert f"(iteration {stopped}); checkpoint saved to" in (work / "log.txt").read_text()


@needs_gloo
@pytest.mark.timeout(150)
def test_sigterm_to_torchrun_stops_both_ranks_at_one_iteration(tmp_path):
    proc = _start_slow_job(tmp_path)
    proc.send_signal(signal.SIGTERM)  # torchrun forwards it to both ranks
    console = _finish(proc, tmp_path)
    _check_stopped_together(tmp_path, proc.returncode, console)
    assert "stopped by SIGTERM" in (tmp_path / "work_rank0" / "log.txt").read_text()


@needs_gloo
@pytest.mark.timeout(150)
def test_a_signal_sync_interval_stops_both_ranks_together_at_a_multiple_of_it(tmp_path):
    """signal_sync_interval=8: the ranks share the stop flag after every 8th iteration (and
    at the epoch ends, every 12 iterations here), so both stop together at one of those,
    not at the iteration after the signal (the 2nd to 4th here) as with the default."""
    proc = _start_slow_job(tmp_path, "--signal-sync-interval", "8")
    os.kill(int((tmp_path / "started_rank1").read_text()), signal.SIGTERM)
    console = _finish(proc, tmp_path)
    _check_stopped_together(tmp_path, proc.returncode, console)
    stopped = _results(tmp_path)[0]["iter"]
    assert stopped % 8 == 0 or stopped % 12 == 0, stopped


@needs_gloo
@pytest.mark.timeout(150)
def test_sigterm_to_one_rank_stops_both_ranks_at_one_iteration(tmp_path):
    """Only rank 1 is signalled: the stop flag is all-reduced, so rank 0 stops with it."""
    proc = _start_slow_job(tmp_path)
    os.kill(int((tmp_path / "started_rank1").read_text()), signal.SIGTERM)
    console = _finish(proc, tmp_path)
    _check_stopped_together(tmp_path, proc.returncode, console)
    assert "stopped by a signal on another rank" in \
        (tmp_path / "work_rank0" / "log.txt").read_text()


# -- own train_step, wrapped models, DDP options, samplers, metric order ----------------------
CASES = Path(__file__).parent / "dist_scripts" / "ddp_cases.py"


@pytest.fixture(scope="module")
def ddp_cases(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, Path,
                                         subprocess.CompletedProcess]:
    """dist_scripts/ddp_cases.py on one process (batch 8) and on two ranks (batch 4 each)."""
    root = tmp_path_factory.mktemp("ddp_cases")
    one = _start([sys.executable, str(CASES), "--out", str(root / "single"), "--batch", "8"],
                 root / "single")
    two = _start([sys.executable, "-m", "torch.distributed.run", "--standalone",
                  "--nproc_per_node", "2", str(CASES), "--out", str(root / "ddp"), "--batch", "4"],
                 root / "ddp")
    one, two = _wait(one, root / "single"), _wait(two, root / "ddp")
    assert one.returncode == 0, one.stdout[-3000:] + one.stderr[-3000:]
    assert two.returncode == 0, two.stdout[-3000:] + two.stderr[-3000:]
    return root / "single", one, root / "ddp", two


def _case_weights(out: Path, case: str, rank: int) -> dict[str, torch.Tensor]:
    return torch.load(out / f"weights_{case}_rank{rank}.pt", weights_only=True)


@needs_gloo
@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", ["base_model", "gan", "raw"])
def test_an_own_train_step_keeps_the_ranks_identical_and_matches_one_process(ddp_cases, case):
    """compat BaseModel.train_step (forward through DDP), a GAN stepping two optimizers with
    clipping, and a step that calls optimizer.step() itself: gradients are averaged."""
    single, _, ddp, _ = ddp_cases
    w0, w1 = _case_weights(ddp, case, 0), _case_weights(ddp, case, 1)
    assert all(torch.equal(w0[k], w1[k]) for k in w0)
    assert _max_diff(w0, _case_weights(single, case, 0)) < 1e-5
    if case == "base_model":
        assert _results(ddp)[0]["base_model_wrapper"] == "DistributedDataParallel"


@needs_gloo
@pytest.mark.timeout(180)
def test_an_own_train_step_gets_rank_0s_buffers_before_every_step(ddp_cases):
    _, _, ddp, _ = ddp_cases
    w0, w1 = _case_weights(ddp, "batch_norm", 0), _case_weights(ddp, "batch_norm", 1)
    assert all(torch.equal(w0[k], w1[k]) for k in w0 if "running" not in k)  # the weights
    seen = [torch.load(ddp / f"step_buffers_batch_norm_rank{r}.pt") for r in (0, 1)]
    assert len(seen[0]) == len(seen[1]) == 3 * 12  # 3 buffers, 12 steps
    assert all(torch.equal(a, b) for a, b in zip(*seen))  # rank 1's own stats never used


@needs_gloo
@pytest.mark.timeout(180)
def test_a_model_given_in_ddp_is_unwrapped_and_wrapped_once(ddp_cases):
    _, _, ddp, _ = ddp_cases
    rank0, rank1 = _results(ddp)
    assert rank0["prewrapped"]["model_is_bare"] and rank1["prewrapped"]["model_is_bare"]
    assert rank0["prewrapped"]["wrapped_once"]
    assert rank0["prewrapped"]["checkpoint_keys"] == ["0.bias", "0.weight", "2.bias", "2.weight"]
    w0, w1 = _case_weights(ddp, "prewrapped", 0), _case_weights(ddp, "prewrapped", 1)
    assert all(torch.equal(w0[k], w1[k]) for k in w0)


@needs_gloo
@pytest.mark.timeout(180)
def test_find_unused_parameters_and_model_wrapper_cfg_reach_ddp(ddp_cases):
    _, _, ddp, _ = ddp_cases
    unused = _results(ddp)[0]["unused"]
    assert unused["find_unused_parameters"] == {"iter": 6, "find_unused": True,
                                                "broadcast_buffers": True}
    assert unused["model_wrapper_cfg"] == {"iter": 6, "find_unused": True,
                                           "broadcast_buffers": False}


@needs_gloo
@pytest.mark.timeout(180)
def test_a_sampler_subclass_is_kept_and_a_distributed_sampler_keeps_its_seed(ddp_cases):
    """A DistributedSampler subclass is the user's (kept); an exact DistributedSampler with
    seed=123, drop_last=True gives the very samples it would, epoch after epoch."""
    _, _, ddp, _ = ddp_cases
    for rank, result in enumerate(_results(ddp)):
        samplers = result["samplers"]
        assert samplers["subclass"]["kind"] == "Reversed"
        assert samplers["exact"]["kind"] == "EpochSampler"
        for name in ("subclass", "exact"):
            assert samplers[name]["seen"] == samplers[name]["expected"], (rank, name)
        assert len(samplers["exact"]["seen"][0]) == 25  # 51 // 2: the odd sample dropped


@needs_gloo
@pytest.mark.timeout(180)
def test_metrics_get_predictions_and_samples_in_dataset_order(ddp_cases):
    """23 validation samples, strided over two ranks (12 and 11): gathered back in order."""
    _, _, ddp, _ = ddp_cases
    for result in _results(ddp):
        assert result["val_samples"] == {"samples_in_order": 1.0}
        assert result["val_tensors"] == {"targets_in_order": 1.0}


def test_interleave_puts_strided_shards_back_in_order():
    assert dist_utils.interleave([[0, 3, 6], [1, 4], [2, 5]]) == list(range(7))
    assert dist_utils.interleave([[0], []]) == [0]
    assert dist_utils.interleave([]) == []
    tensor = torch.arange(3.0)
    assert dist_utils.all_gather_interleave(tensor) is tensor  # one process: as is


def _toy_runner(tmp_path, model=None, **kwargs):
    from torch.utils.data import DataLoader, TensorDataset  # noqa: PLC0415

    from hookline import Runner  # noqa: PLC0415

    data = TensorDataset(torch.randn(16, 4, generator=torch.Generator().manual_seed(0)),
                         torch.randint(0, 2, (16,), generator=torch.Generator().manual_seed(1)))
    options = dict(optimizer={"type": "SGD", "lr": 0.1}, loss_fn=torch.nn.CrossEntropyLoss(),
                   train_dataloader=DataLoader(data, batch_size=4), max_epochs=1,
                   val_dataloader=DataLoader(data, batch_size=8), metrics={"acc": "accuracy"},
                   work_dir=tmp_path, default_hooks={"logger": None})
    options.update(kwargs)
    return Runner(torch.nn.Linear(4, 2) if model is None else model, **options)


def test_ddp_options_are_accepted_and_unused_on_one_process(tmp_path):
    runner = _toy_runner(tmp_path, find_unused_parameters=True, model_wrapper_cfg={
        "type": "DistributedDataParallel", "broadcast_buffers": False, "bucket_cap_mb": 10,
        "gradient_as_bucket_view": True, "static_graph": False})
    runner.train()
    assert runner.ddp_model is None and runner.iter == 4


@pytest.mark.parametrize("kwargs,match", [
    ({"find_unused_parameters": "yes"}, "find_unused_parameters must be True or False"),
    ({"model_wrapper_cfg": {"type": "MMFullyShardedDataParallel"}},
     "type must be 'MMDistributedDataParallel' or 'DistributedDataParallel'"),
    ({"model_wrapper_cfg": {"detect_anomalous_params": True}},
     "model_wrapper_cfg got 'detect_anomalous_params'.*accepted: type, broadcast_buffers"),
    ({"model_wrapper_cfg": {"bucket_cap_mb": 0}}, "bucket_cap_mb must be a positive number"),
    ({"model_wrapper_cfg": {"static_graph": 1}}, "static_graph must be True or False"),
    ({"model_wrapper_cfg": "MMDistributedDataParallel"}, "model_wrapper_cfg must be a dict"),
    ({"find_unused_parameters": True,
      "model_wrapper_cfg": {"find_unused_parameters": False}}, "disagree"),
    ({"launcher": "pytorch"}, "'launcher': pass nothing: start the script with torchrun"),
    ({"env_cfg": {"dist_cfg": {"backend": "gloo"}}}, "'env_cfg': pass nothing: under torchrun"),
    ({"sync_bn": "torch"}, "convert_sync_batchnorm"),
])
def test_ddp_arguments_are_checked_before_anything_is_built(tmp_path, kwargs, match):
    from hookline import ConfigError  # noqa: PLC0415

    with pytest.raises(ConfigError, match=match):
        _toy_runner(tmp_path / "run", **kwargs)
    assert not (tmp_path / "run").exists()


def test_a_wrapped_model_is_unwrapped(tmp_path):
    net = torch.nn.Linear(4, 2)
    runner = _toy_runner(tmp_path, model=torch.nn.DataParallel(net))
    assert runner.model is net
    runner.train()
    checkpoint = torch.load(tmp_path / "epoch_1.pth", weights_only=True)
    assert sorted(checkpoint["state_dict"]) == ["bias", "weight"]


def test_load_from_strips_the_module_prefix_of_a_raw_ddp_checkpoint(tmp_path):
    torch.manual_seed(3)
    saved = torch.nn.Linear(4, 2)
    path = tmp_path / "ddp.pth"
    torch.save({"state_dict": {f"module.{k}": v for k, v in saved.state_dict().items()}}, path)
    runner = _toy_runner(tmp_path / "run", load_from=str(path))
    runner.val()
    assert all(torch.equal(runner.model.state_dict()[k], v)
               for k, v in saved.state_dict().items())
    # a model whose own keys all start with "module." takes such keys as they are
    from hookline.engine.checkpoint.fit import without_ddp_prefix  # noqa: PLC0415

    inner = torch.nn.Module()
    inner.module = torch.nn.Linear(4, 2)
    checkpoint = torch.load(path, weights_only=True)
    assert without_ddp_prefix(inner, checkpoint) is checkpoint
