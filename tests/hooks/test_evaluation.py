"""EvalHook / DistEvalHook on real runs: the same metrics, epochs, message-hub values and
log records as the built-in validation, interval/start, save_best with resume, and a
two-process DistEvalHook run under torchrun (gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

from hookline import ConfigError, Hook, Runner
from hookline.hooks import CheckpointHook, EvalHook


def dataset(n: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=generator)
    return TensorDataset(x, (x[:, 0] + x[:, 3] > 0).long())


class Seen(Hook):
    """What the after_val_epoch hooks see: position, metrics and the message hub."""

    priority = "LOWEST"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def after_val_epoch(self, runner, metrics=None) -> None:
        self.calls.append((runner.epoch, runner.iter, dict(metrics),
                           runner.message_hub.latest("val/accuracy")))


def make_runner(work_dir, hooks=(), *, val=None, max_epochs=None, max_iters=None, val_interval=None,
                checkpoint=None, resume=None, logger=None) -> Runner:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    return Runner(model, optimizer={"type": "SGD", "lr": 0.3}, loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=DataLoader(dataset(40, 0), batch_size=4, shuffle=True),
                  val_dataloader=val, metrics={"accuracy": "accuracy"}, max_epochs=max_epochs,
                  max_iters=max_iters, val_interval=val_interval, work_dir=work_dir, device="cpu",
                  hooks=hooks, resume=resume, default_hooks={
                      "logger": logger, "progress": None, "checkpoint": checkpoint})


def val_loader() -> DataLoader:
    return DataLoader(dataset(30, 1), batch_size=8)


def val_records(work_dir) -> list[dict]:
    lines = (work_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["mode"] == "val"]


def test_by_epoch_matches_the_builtin_validation_metrics_hub_and_logs(tmp_path):
    builtin, hooked = Seen(), Seen()
    logger = {"type": "LoggerHook", "interval": 5}
    make_runner(tmp_path / "a", [builtin], val=val_loader(), val_interval=2, max_epochs=4,
                logger=logger).train()
    make_runner(tmp_path / "b", [EvalHook(val_loader(), interval=2), hooked], max_epochs=4,
                logger=logger).train()
    assert [c[:2] for c in hooked.calls] == [(2, 20), (4, 40)]
    assert hooked.calls == builtin.calls
    assert val_records(tmp_path / "b") == val_records(tmp_path / "a")


def test_by_iteration_matches_the_builtin_validation_of_an_iteration_run(tmp_path):
    builtin, hooked = Seen(), Seen()
    make_runner(tmp_path / "a", [builtin], val=val_loader(), val_interval=7, max_iters=28).train()
    make_runner(tmp_path / "b", [EvalHook(val_loader(), interval=7, by_epoch=False), hooked],
                max_iters=28).train()
    assert [c[1] for c in hooked.calls] == [7, 14, 21, 28]
    assert hooked.calls == builtin.calls


def test_by_iteration_inside_an_epoch_run_and_start(tmp_path):
    seen = Seen()
    make_runner(tmp_path, [EvalHook(val_loader(), interval=6, by_epoch=False), seen],
                max_epochs=2).train()
    assert [c[:2] for c in seen.calls] == [(0, 6), (1, 12), (1, 18)]
    seen = Seen()
    make_runner(tmp_path, [EvalHook(val_loader(), start=0, interval=2), seen], max_epochs=3).train()
    assert [c[0] for c in seen.calls] == [0, 2]  # before training, then every 2 epochs
    seen = Seen()
    make_runner(tmp_path, [EvalHook(val_loader(), start=2), seen], max_epochs=4).train()
    assert [c[0] for c in seen.calls] == [2, 3, 4]


def test_by_epoch_in_an_iteration_run_counts_passes_over_the_data(tmp_path):
    seen = Seen()
    make_runner(tmp_path, [EvalHook(val_loader(), interval=2), seen], max_iters=45).train()
    assert [c[1] for c in seen.calls] == [20, 40]  # 10 iterations per pass


def test_own_metrics_and_runner_metrics_are_restored(tmp_path):
    def error(preds, targets):
        return 1.0 - (preds.argmax(1) == targets).float().mean()

    seen = Seen()
    runner = make_runner(tmp_path, [EvalHook(val_loader(), metrics={"err": error,
                                                                     "accuracy": "accuracy"}),
                                    seen], max_epochs=1)
    runner.train()
    metrics = seen.calls[0][2]
    assert metrics["err"] == pytest.approx(1 - metrics["accuracy"])
    assert list(runner.metrics) == ["accuracy"]


def test_save_best_and_resume_in_the_middle_of_a_run(tmp_path):
    def hooks():
        return [EvalHook(val_loader(), save_best="accuracy"), Seen()]

    full_hooks = hooks()
    make_runner(tmp_path / "full", full_hooks, max_epochs=4,
                checkpoint={"type": "CheckpointHook"}).train()
    best = full_hooks[0].best
    values = [c[2]["accuracy"] for c in full_hooks[1].calls]
    assert best.best_score == max(values)
    assert (tmp_path / "full" / best.best_ckpt).is_file()
    resumed_hooks = hooks()
    make_runner(tmp_path / "resumed", resumed_hooks, max_epochs=4,
                resume=tmp_path / "full" / "epoch_2.pth").train()
    assert resumed_hooks[1].calls == full_hooks[1].calls[2:]  # epoch 2 is not evaluated again
    assert resumed_hooks[0].last_evaluated == 4
    assert resumed_hooks[0].best.state_dict() == best.state_dict()


def test_best_goes_to_the_checkpoint_hooks_out_dir_and_bad_arguments(tmp_path):
    hook = EvalHook(val_loader(), save_best="loss")
    make_runner(tmp_path / "run", [hook], max_epochs=1,
                checkpoint=CheckpointHook(out_dir=tmp_path / "ckpts")).train()
    # in the checkpoint hook's folder: out_dir/<work dir name>, as MMEngine and mmcv
    assert (tmp_path / "ckpts" / "run" / "best_loss_epoch_1.pth").is_file()
    for kwargs in (dict(interval=0), dict(start=-1), dict(save_best="wer"),
                   dict(metrics={"x": 3})):
        with pytest.raises(ConfigError):
            EvalHook(val_loader(), **kwargs)
    with pytest.raises(ConfigError):
        EvalHook(None)


DIST_SCRIPT = textwrap.dedent('''
    import json, os, sys
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    from hookline import Hook, Runner
    from hookline.hooks import DistEvalHook

    out = sys.argv[1]
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(30, 4, generator=g)
    val = TensorDataset(x, (x[:, 0] + x[:, 3] > 0).long())
    x = torch.randn(24, 4, generator=g)
    train = TensorDataset(x, (x[:, 0] > 0).long())

    class Seen(Hook):
        priority = "LOWEST"
        calls = []
        def after_val_epoch(self, runner, metrics=None):
            bn = runner.model[1].running_mean.tolist()
            self.calls.append({"epoch": runner.epoch, "metrics": metrics, "bn": bn})

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8),
                                torch.nn.Tanh(), torch.nn.Linear(8, 2))
    runner = Runner(model, optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=2, device="cpu",
                    train_dataloader=DataLoader(train, batch_size=4, shuffle=True),
                    metrics={"accuracy": "accuracy"}, work_dir=os.path.join(out, "work"),
                    hooks=[DistEvalHook(DataLoader(val, batch_size=4), gpu_collect=True), Seen()],
                    default_hooks={"logger": None, "progress": None, "checkpoint": None})
    runner.train()
    # the reference: one process evaluating the whole set with rank 0's final weights
    model.eval()
    with torch.no_grad():
        preds = model(val.tensors[0])
    acc = (preds.argmax(1) == val.tensors[1]).float().mean().item()
    with open(os.path.join(out, f"rank{runner.rank}.json"), "w") as f:
        json.dump({"calls": Seen.calls, "full_set_accuracy": acc}, f)
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()  # no gloo threads left running at exit
''')


@pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                    reason="torch.distributed with gloo is not available")
def test_dist_eval_hook_on_two_processes_gathers_every_sample(tmp_path):
    script = tmp_path / "dist_eval.py"
    script.write_text(DIST_SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node", "2", str(script), str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [c["epoch"] for c in ranks[0]["calls"]] == [1, 2]
    # both ranks see the same metrics, over all 30 samples (not one shard, none twice)
    assert ranks[0]["calls"] == ranks[1]["calls"]
    accuracy = ranks[0]["calls"][-1]["metrics"]["accuracy"]
    assert accuracy == pytest.approx(ranks[0]["full_set_accuracy"], abs=1e-6)
    assert round(accuracy * 30, 4) == round(accuracy * 30)
