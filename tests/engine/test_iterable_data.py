"""Training on loaders without a length (an IterableDataset), as Lightning and MMEngine do:
``max_iters`` cycles the iterator, ``max_epochs`` ends an epoch when it is exhausted."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from hookline import ConfigError, Hook, HookError, Runner
from hookline.engine.checkpoint import read_latest
from hookline.engine.data_pass import LookAheadPass, start_pass
from hookline.hooks import ProgressBarHook

from .toy import Explode, Stream


class SizedStream(Stream):
    """A stream that knows its length: the sized path, with a sampler hookline does not own."""

    def __len__(self) -> int:
        return len(self.x)


class Record(Hook):
    """What hooks see at every training iteration and epoch end."""

    def __init__(self) -> None:
        self.iters: list[tuple[int, int | None, int | None, bool, int]] = []
        self.epoch_ends: list[tuple[int, int | None]] = []

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
        self.iters.append((runner.iter, runner.max_iters, runner.train_loop.epoch_length,
                           self.is_last_train_iter(runner), batch_idx))

    def after_train_epoch(self, runner) -> None:
        self.epoch_ends.append((runner.iter, runner.max_iters))


def make(tmp_path: Path, *, train=None, val=None, hooks=(), default_hooks=None, **kwargs) -> Runner:
    torch.manual_seed(0)
    hooks_cfg = {"logger": {"type": "LoggerHook", "interval": 2}, "progress": None}
    hooks_cfg.update(default_hooks or {})
    return Runner(torch.nn.Linear(4, 2), optimizer={"type": "SGD", "lr": 0.1},
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  train_dataloader=train if train is not None else DataLoader(Stream(), batch_size=8),
                  val_dataloader=val, metrics={"acc": "accuracy"}, work_dir=tmp_path,
                  hooks=list(hooks), default_hooks=hooks_cfg, device="cpu", **kwargs)


def records(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]


def log_lines(tmp_path: Path, start: str) -> list[str]:
    lines = (tmp_path / "log.txt").read_text().splitlines()
    return [line.split(" - INFO - ", 1)[1] for line in lines
            if " - INFO - " in line and line.split(" - INFO - ", 1)[1].startswith(start)]


# -- the pass helpers ------------------------------------------------------------------------
def test_look_ahead_knows_the_last_batch_before_it_is_used():
    data = LookAheadPass(iter("abc"))
    seen = [(index, item, data.exhausted, data.fetched) for index, item in data]
    assert seen == [(0, "a", False, 2), (1, "b", False, 3), (2, "c", True, 3)]
    empty = LookAheadPass(iter(()))
    assert list(empty) == [] and empty.exhausted and empty.fetched == 0


def test_start_pass_reads_and_drops_batches_of_a_loader_without_a_length():
    loader = DataLoader(Stream(10), batch_size=4)  # 3 batches: 4, 4, 2
    iterator, skipped = start_pass(loader, 2)
    assert skipped == 2 and [len(x) for x, _ in iterator] == [2]
    assert start_pass(loader, 5)[1] == 3  # the pass is shorter than the skip


# -- max_epochs: an epoch ends when the iterator is exhausted ---------------------------------
def test_max_epochs_trains_with_lengths_learnt_from_the_first_pass(tmp_path):
    record = Record()
    stream = Stream()  # 40 samples, batch 8: 5 batches per pass
    runner = make(tmp_path, train=DataLoader(stream, batch_size=8), hooks=[record], max_epochs=3,
                  val=DataLoader(Stream(12, seed=1), batch_size=8))
    assert runner.max_iters is None and runner.max_epochs == 3
    runner.train()
    assert runner.iter == 15 and runner.epoch == 3 and runner.max_iters == 15
    # set_epoch before each epoch (the loop's, and DistSamplerSeedHook's repeat)
    assert stream.epochs == [0, 0, 1, 1, 2, 2] and stream.passes == 3
    # first pass: unknown until its last batch is read (one ahead), then exact
    assert [r[1] for r in record.iters[:5]] == [None, None, None, None, 15]
    assert [r[2] for r in record.iters[:5]] == [None, None, None, None, 5]
    assert all(r[1] == 15 and r[2] == 5 for r in record.iters[5:])
    assert [r[3] for r in record.iters] == [False] * 14 + [True]  # is_last_train_iter, exactly
    assert [r[4] for r in record.iters] == [0, 1, 2, 3, 4] * 3
    assert record.epoch_ends == [(5, 15), (10, 15), (15, 15)]
    # log lines: [n] while the length is unknown, [n/N] after; the eval lines [n] too
    train_lines = log_lines(tmp_path, "Epoch(train)")
    assert [line.split("  ")[0] for line in train_lines] == [
        "Epoch(train) [1][2]", "Epoch(train) [1][4]", "Epoch(train) [1][5/5]",
        "Epoch(train) [2][2/5]", "Epoch(train) [2][4/5]", "Epoch(train) [2][5/5]",
        "Epoch(train) [3][2/5]", "Epoch(train) [3][4/5]", "Epoch(train) [3][5/5]"]
    assert "eta:" not in train_lines[0] and "eta:" in train_lines[2]
    assert [line.split("  ")[0] for line in log_lines(tmp_path, "Epoch(val)")] == [
        "Epoch(val) [1][2]", "Epoch(val) [2][2]", "Epoch(val) [3][2]"]
    assert "data: train size unknown (IterableDataset), batches per epoch unknown; val size " \
           "unknown (IterableDataset)" in (tmp_path / "log.txt").read_text()
    rows = records(tmp_path)
    assert [(r["mode"], r["epoch"], r["iter"]) for r in rows if r["mode"] == "val"] == [
        ("val", 1, 5), ("val", 2, 10), ("val", 3, 15)]
    assert [r["iter"] for r in rows if r["mode"] == "train"] == [2, 4, 5, 7, 9, 10, 12, 14, 15]
    assert sorted(p.name for p in tmp_path.glob("*.pth")) == [
        "epoch_1.pth", "epoch_2.pth", "epoch_3.pth"]


def test_the_progress_bar_has_no_total_until_a_pass_ends(tmp_path):
    stream = io.StringIO()
    bar = ProgressBarHook(enabled=True, file=stream, leave=True)
    totals: list[int | None] = []
    eval_bars: list[tuple[int | None, int]] = []

    class Totals(Hook):
        priority = "LOWEST"

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
            totals.append(bar._bar.total)  # noqa: SLF001  (the tqdm bar under test)

        def after_val_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:
            eval_bars.append((bar._eval_bar.total, bar._eval_bar.n))  # noqa: SLF001

    runner = make(tmp_path, hooks=[Totals()], max_epochs=2, default_hooks={"progress": bar},
                  val=DataLoader(Stream(12, seed=1), batch_size=8))
    runner.train()
    assert totals == [None] * 4 + [10] * 6
    text = stream.getvalue()
    assert "10/10" in text  # the finished bar, kept (leave=True), shows the total it learnt
    assert eval_bars == [(None, 1), (None, 2)] * 2  # eval bars without a total count batches


def test_val_and_test_loaders_without_a_length_run_standalone(tmp_path):
    val = DataLoader(Stream(20, seed=1), batch_size=8)
    runner = make(tmp_path, val=val, test_dataloader=DataLoader(Stream(9, seed=2), batch_size=4),
                  max_epochs=1)
    assert set(runner.val()) == {"loss", "acc"} and runner.val_loop.num_batches == 3
    runner.test()
    assert runner.test_loop.num_batches == 3
    # MMEngine's LogProcessor: epoch 0 before any training; a test names no epoch
    assert [line.split("  ")[0] for line in log_lines(tmp_path, "Epoch(")] == [
        "Epoch(val) [0][3]", "Epoch(test) [3]"]


# -- max_iters: the iterator restarts when exhausted ------------------------------------------
def test_max_iters_cycles_the_iterator(tmp_path):
    record = Record()
    stream = Stream()
    runner = make(tmp_path, train=DataLoader(stream, batch_size=8), hooks=[record], max_iters=12,
                  val_interval=5, val=DataLoader(Stream(12, seed=1), batch_size=8),
                  default_hooks={"sampler_seed": {"type": "DistSamplerSeedHook"}})
    assert runner.max_iters == 12 and runner.max_epochs is None
    runner.train()
    assert runner.iter == 12 and runner.epoch == 0 and runner.max_epochs == 3
    assert stream.passes == 3 and stream.epochs == [0, 1, 2]  # one set_epoch per data pass
    assert [r[4] for r in record.iters] == list(range(12))  # MMEngine's global batch_idx
    assert [r[2] for r in record.iters] == [None] * 5 + [5] * 7
    assert [r[3] for r in record.iters] == [False] * 11 + [True]
    assert [line.split("  ")[0] for line in log_lines(tmp_path, "Iter(")][:4] == [
        "Iter(train) [ 2/12]", "Iter(train) [ 4/12]", "Iter(val) [2]", "Iter(train) [ 6/12]"]
    assert [r["iter"] for r in records(tmp_path) if r["mode"] == "val"] == [5, 10, 12]
    # CheckpointHook by_epoch (the default) cannot count passes of unknown length: the end only
    assert sorted(p.name for p in tmp_path.glob("*.pth")) == ["iter_12.pth"]
    assert "saves at the end of training only" in (tmp_path / "log.txt").read_text()


def test_max_iters_validates_every_1000_iterations_by_default(tmp_path):
    runner = make(tmp_path, max_iters=3)
    assert runner.val_interval == 1000  # one pass is unknown: MMEngine's default


# -- resume ------------------------------------------------------------------------------------
def final(runner: Runner) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in runner.model.state_dict().items()}


@pytest.mark.parametrize(("lengths", "stop_at"), [({"max_epochs": 3}, 7), ({"max_epochs": 3}, 6),
                                                  ({"max_epochs": 3}, 5),
                                                  ({"max_iters": 13}, 7), ({"max_iters": 13}, 11)])
@pytest.mark.parametrize("kind", [Stream, SizedStream])
def test_resume_replays_a_deterministic_stream(tmp_path, lengths, stop_at, kind):
    reference = make(tmp_path / "ref", train=DataLoader(kind(), batch_size=8), **lengths)
    reference.train()
    checkpoint = {"checkpoint": {"type": "CheckpointHook", "interval": 1, "by_epoch": False}}
    broken = make(tmp_path / "run", train=DataLoader(kind(), batch_size=8),
                  hooks=[Explode(stop_at)], default_hooks=checkpoint, **lengths)
    with pytest.raises(HookError, match="Explode"):
        broken.train()
    assert read_latest(tmp_path / "run").name == f"iter_{stop_at - 1}.pth"
    stream = kind()
    resumed = make(tmp_path / "run", train=DataLoader(stream, batch_size=8), resume="auto",
                   default_hooks=checkpoint, **lengths)
    resumed.train()
    assert resumed.iter == reference.iter and resumed.epoch == reference.epoch
    # the batches before the resume point were read and dropped: same data, same weights
    for key, value in final(reference).items():
        assert torch.equal(value, final(resumed)[key]), key
    assert resumed.max_iters == reference.max_iters


# -- what cannot work: one ConfigError at construction ----------------------------------------
def test_a_scheduler_length_that_needs_the_epoch_length_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"T_max follows the run.*no length.*give T_max a "
                                          r"number, or train with max_iters"):
        make(tmp_path, max_epochs=2,
             param_scheduler={"type": "CosineAnnealingLR", "by_epoch": False})
    with pytest.raises(ConfigError, match=r"steps once per epoch.*set by_epoch: false"):
        make(tmp_path, max_iters=10, param_scheduler={"type": "StepLR", "step_size": 1})
    assert not (tmp_path / "log.txt").exists() or "Epoch" not in (tmp_path / "log.txt").read_text()
    # what it can count works: per-epoch cosine over max_epochs, per-iteration over max_iters
    make(tmp_path, max_epochs=2, param_scheduler={"type": "CosineAnnealingLR"}).train()
    runner = make(tmp_path / "iters", max_iters=6,
                  param_scheduler={"type": "CosineAnnealingLR", "by_epoch": False})
    assert runner.param_schedulers[0].T_max == 6
    runner.train()


def test_a_dict_config_with_an_iterable_dataset(tmp_path):
    runner = make(tmp_path, train={"dataset": Stream(), "batch_size": 8}, max_epochs=1)
    runner.train()
    assert runner.iter == 5
    with pytest.raises(ConfigError, match="shuffle=True with an IterableDataset"):
        make(tmp_path, train={"dataset": Stream(), "batch_size": 8, "shuffle": True},
             max_epochs=1)


def test_an_empty_stream_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="yielded no batch"):
        make(tmp_path, train=DataLoader(Stream(0), batch_size=8), max_iters=4).train()


def test_the_last_accumulation_group_of_an_epoch_steps_at_its_last_batch(tmp_path):
    torch.manual_seed(0)
    runner = Runner(torch.nn.Linear(4, 2), loss_fn=torch.nn.CrossEntropyLoss(),
                    optim_wrapper={"optimizer": {"type": "SGD", "lr": 0.1},
                                   "accumulative_counts": 2},
                    train_dataloader=DataLoader(Stream(), batch_size=8), max_epochs=2,
                    work_dir=tmp_path, device="cpu",
                    default_hooks={"logger": None, "progress": None, "checkpoint": None})
    steps: list[int] = []
    runner.optimizer.register_step_post_hook(lambda *_: steps.append(runner.iter))
    runner.train()
    assert steps == [1, 3, 4, 6, 8, 9]  # 5 batches an epoch: groups of 2, 2 and 1
