"""The fast data path: batches by indexing a TensorDataset's tensors (or a dataset's
``__getitems__``) are the DataLoader's batches, bit for bit, with the same random numbers
drawn; loaders where that is not exact go through the DataLoader itself."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    SubsetRandomSampler,
    TensorDataset,
    default_collate,
    random_split,
)
from torch.utils.data._utils.collate import default_collate_fn_map

from hookline import Hook, HookError, Runner
from hookline.engine.checkpoint import read_latest
from hookline.engine.fast_batches import NO_ACCELERATOR, data_path, iter_batches
from hookline.engine.run_header import run_header

from .test_resume import assert_same_state
from .toy import Explode, Net, final_state, make_runner


def tensors(n: int = 61) -> TensorDataset:
    generator = torch.Generator().manual_seed(7)
    return TensorDataset(torch.randn(n, 6, generator=generator),
                         torch.randint(0, 3, (n,), generator=generator))


def assert_same_batches(fast: list[Any], plain: list[Any]) -> None:
    """Same number, same container types, same tensors (values, dtypes, shapes, strides)."""
    assert len(fast) == len(plain)
    for a, b in zip(fast, plain):
        assert type(a) is type(b), (type(a), type(b))
        if isinstance(b, dict):
            assert a.keys() == b.keys()
            a, b = list(a.values()), list(b.values())
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert type(x) is type(y) is torch.Tensor
            assert x.dtype == y.dtype and x.shape == y.shape and x.stride() == y.stride()
            assert torch.equal(x, y)


def both_ways(loader: DataLoader, seed: int = 3) -> tuple[list[Any], list[Any]]:
    """Every batch of one pass by the fast path and by the DataLoader, from the same global
    RNG state; also checks both left the global RNG (and the loader's generator) alike."""
    states = []
    passes = []
    for fast in (True, False):
        torch.manual_seed(seed)
        if loader.generator is not None:
            loader.generator.manual_seed(seed)
        passes.append(list(iter_batches(loader) if fast else loader))
        states.append((torch.get_rng_state(), None if loader.generator is None
                       else loader.generator.get_state()))
    assert torch.equal(states[0][0], states[1][0])  # the same random numbers were drawn
    if loader.generator is not None:
        assert torch.equal(states[0][1], states[1][1])
    return passes[0], passes[1]


# -- one pass, against the DataLoader ----------------------------------------------------------
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("generator", [False, True])
def test_a_tensor_dataset_pass_is_the_dataloaders(shuffle, drop_last, generator):
    loader = DataLoader(tensors(61), batch_size=8, shuffle=shuffle, drop_last=drop_last,
                        generator=torch.Generator() if generator else None)
    assert data_path(loader).kind == "tensors"
    fast, plain = both_ways(loader)
    assert_same_batches(fast, plain)
    assert len(fast) == len(loader) == (7 if drop_last else 8)
    assert type(fast[0]) is list  # default_collate makes a list of a sample tuple


def test_the_container_is_a_list_even_for_one_tensor():
    loader = DataLoader(TensorDataset(torch.arange(10)), batch_size=4)
    fast, plain = both_ways(loader)
    assert [type(b) for b in fast] == [list] * 3
    assert_same_batches(fast, plain)


def test_non_contiguous_and_channels_last_tensors_give_contiguous_batches():
    images = torch.randn(12, 3, 4, 4).to(memory_format=torch.channels_last)
    columns = torch.randn(5, 12).t()  # (12, 5), not contiguous
    loader = DataLoader(TensorDataset(images, columns, torch.arange(12)), batch_size=5,
                        shuffle=True)
    fast, plain = both_ways(loader)
    assert_same_batches(fast, plain)  # strides compared too
    assert all(t.is_contiguous() for batch in fast for t in batch)


def test_a_subset_of_a_tensor_dataset_is_indexed_through():
    train, _ = random_split(tensors(50), [0.8, 0.2], generator=torch.Generator().manual_seed(1))
    loader = DataLoader(train, batch_size=8, shuffle=True)
    assert data_path(loader).describe() == "fast path (indexing a TensorDataset through a Subset)"
    assert_same_batches(*both_ways(loader))


class Records(Dataset):
    """A map dataset with ``__getitems__`` (dict samples); counts its calls."""

    def __init__(self, n: int = 21) -> None:
        self.x = torch.randn(n, 3, generator=torch.Generator().manual_seed(0))
        self.calls = 0

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, Any]:
        raise AssertionError("the DataLoader calls __getitems__ when a dataset has one")

    def __getitems__(self, indices: list[int]) -> list[dict[str, Any]]:
        self.calls += 1
        return [{"x": self.x[i], "i": i} for i in indices]


def test_a_getitems_dataset_is_collated_as_the_dataloader_does():
    dataset = Records()
    loader = DataLoader(dataset, batch_size=4, shuffle=True)
    assert data_path(loader).kind == "getitems"
    fast, plain = both_ways(loader)
    assert type(fast[0]) is dict and fast[0]["i"].dtype == torch.int64
    assert_same_batches(fast, plain)
    assert dataset.calls == 2 * len(loader)


class OddBatches(BatchSampler):
    """Index lists the fast path cannot index with as they are: negatives, tensors."""

    def __init__(self) -> None:
        pass

    def __iter__(self):
        yield [-1, 0, 3]
        yield torch.tensor([5, -2])
        yield [2]

    def __len__(self) -> int:
        return 3


def test_negative_and_tensor_indices_give_the_dataloaders_batches():
    loader = DataLoader(tensors(9), batch_sampler=OddBatches())
    assert data_path(loader).kind == "tensors"
    assert_same_batches(*both_ways(loader))


def test_an_index_out_of_range_raises_as_the_dataloader_does():
    loader = DataLoader(tensors(4), batch_sampler=[[0, 9]])
    with pytest.raises(IndexError) as plain:
        list(loader)
    with pytest.raises(IndexError) as fast:
        list(iter_batches(loader))
    assert str(fast.value) == str(plain.value)


# -- loaders that keep the DataLoader ----------------------------------------------------------
class Plain(Dataset):
    """A map dataset without ``__getitems__``; counts ``__getitem__`` calls."""

    def __init__(self) -> None:
        self.data = tensors(10)
        self.calls = 0

    def __len__(self) -> int:
        return 10

    def __getitem__(self, i: int) -> tuple[torch.Tensor, ...]:
        self.calls += 1
        return self.data[i]


class Augmented(TensorDataset):
    def __getitem__(self, i):
        return tuple(t[i] * 2 for t in self.tensors)


def counting_collate(calls: list[int]):
    def collate(batch):
        calls.append(len(batch))
        return default_collate(batch)
    return collate


def test_loaders_where_indexing_is_not_exact_go_through_the_dataloader():
    data = tensors(10)
    calls: list[int] = []
    cases = {
        "num_workers=2": DataLoader(data, batch_size=4, num_workers=2),
        "a custom collate_fn": DataLoader(data, batch_size=4, collate_fn=counting_collate(calls)),
        "Plain has no __getitems__": DataLoader(Plain(), batch_size=4),
        "Augmented changes how a TensorDataset indexes": DataLoader(
            Augmented(*data.tensors), batch_size=4),
        "batch_size=None: no batching": DataLoader(data, batch_size=None),
        "fast_data=False": DataLoader(data, batch_size=4),
    }
    for reason, loader in cases.items():
        path = data_path(loader, enabled=reason != "fast_data=False")
        assert (path.kind, path.describe()) == ("dataloader", f"DataLoader ({reason})")
    # iterated, they are the DataLoader's own passes
    assert len(list(iter_batches(cases["a custom collate_fn"]))) == 3 and calls == [4, 4, 2]
    plain = cases["Plain has no __getitems__"]
    list(iter_batches(plain))
    assert plain.dataset.calls == 10
    augmented = list(iter_batches(cases["Augmented changes how a TensorDataset indexes"]))
    assert torch.equal(augmented[0][0], data.tensors[0][:4] * 2)
    assert data_path([1, 2]).kind == "iterable"


def test_a_changed_default_collate_fn_map_keeps_the_dataloader(monkeypatch):
    def doubled(batch, *, collate_fn_map=None):
        return torch.stack(batch) * 2

    monkeypatch.setitem(default_collate_fn_map, torch.Tensor, doubled)
    loader = DataLoader(tensors(8), batch_size=4)
    assert data_path(loader).describe() == "DataLoader (default_collate_fn_map was changed)"
    assert_same_batches(list(iter_batches(loader)), list(loader))


@pytest.mark.skipif(torch.accelerator.is_available(), reason="checks the no-accelerator warning")
def test_pin_memory_without_an_accelerator_warns_as_the_dataloader_and_does_not_pin():
    loader = DataLoader(tensors(10), batch_size=4, pin_memory=True)
    for batches in (lambda: iter_batches(loader), lambda: iter(loader)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batch = next(batches())
        assert [str(w.message) for w in caught] == [NO_ACCELERATOR]
        assert not batch[0].is_pinned()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("pin_memory", [True, False])
def test_on_cuda_batches_come_from_pinned_memory(pin_memory):
    loader = DataLoader(tensors(30), batch_size=8, shuffle=True, pin_memory=pin_memory)
    fast = list(iter_batches(loader, device=torch.device("cuda")))
    assert all(t.is_pinned() for batch in fast for t in batch)
    torch.manual_seed(0)
    first = list(iter_batches(loader, device=torch.device("cuda")))
    torch.manual_seed(0)
    assert_same_batches([[t.clone() for t in b] for b in first], list(loader))


# -- training both ways ------------------------------------------------------------------------
class RecordBatches(Hook):
    """Keeps a copy of every training and validation batch."""

    def __init__(self) -> None:
        self.train: list[Any] = []
        self.val: list[Any] = []

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        self.train.append([t.clone() for t in data_batch])

    def before_val_iter(self, runner, batch_idx, data_batch=None) -> None:
        self.val.append([t.clone() for t in data_batch])


def train(work_dir: Path, fast: bool, loader: DataLoader | None = None, **kwargs: Any
          ) -> tuple[Runner, RecordBatches]:
    """The toy run (a model with dropout, Adam, a scheduler, validation every epoch),
    on ``loader`` if given; returns the runner and what it trained and validated on."""
    record = RecordBatches()
    torch.manual_seed(0)
    runner = Runner(Net(), optimizer={"type": "Adam", "lr": 0.01},
                    loss_fn=torch.nn.CrossEntropyLoss(),
                    train_dataloader=loader or DataLoader(tensors(), batch_size=8, shuffle=True),
                    val_dataloader=DataLoader(tensors(), batch_size=16),
                    metrics={"accuracy": "accuracy"}, work_dir=work_dir, hooks=[record],
                    default_hooks={"logger": {"type": "LoggerHook", "interval": 5}},
                    fast_data=fast, **kwargs)
    runner.train()
    return runner, record


@pytest.mark.parametrize("shuffle, drop_last", [(True, False), (False, True), (True, True)])
def test_training_with_and_without_the_fast_path_is_bit_identical(tmp_path, shuffle, drop_last):
    def loader() -> DataLoader:  # 61 samples, batch 8: the last batch has 5
        return DataLoader(tensors(61), batch_size=8, shuffle=shuffle, drop_last=drop_last)

    runs = [train(tmp_path / str(fast), fast, loader(), max_epochs=2) for fast in (True, False)]
    (fast_runner, fast), (plain_runner, plain) = runs
    assert "batches: train fast path (indexing a TensorDataset)" in \
        (tmp_path / "True" / "log.txt").read_text()
    assert "batches: train DataLoader (fast_data=False)" in \
        (tmp_path / "False" / "log.txt").read_text()
    assert_same_batches(fast.train, plain.train)
    assert_same_batches(fast.val, plain.val)
    assert len(fast.train) == 2 * (7 if drop_last else 8)
    assert_same_state(final_state(fast_runner), final_state(plain_runner))


def test_a_loader_that_draws_from_the_global_rng_draws_the_same(tmp_path):
    """A custom sampler (kept as is) on a loader without a generator: the DataLoader's
    iterator draws its seed from the global RNG, which the model's dropout uses too."""
    def loader() -> DataLoader:
        return DataLoader(tensors(40), batch_size=8, sampler=SubsetRandomSampler(range(40)))

    runs = [train(tmp_path / str(fast), fast, loader(), max_epochs=3) for fast in (True, False)]
    assert any(isinstance(m, torch.nn.Dropout) for m in Net().modules())
    assert_same_batches(runs[0][1].train, runs[1][1].train)
    assert_same_state(final_state(runs[0][0]), final_state(runs[1][0]))


def test_an_iteration_based_run_is_bit_identical(tmp_path):
    runs = [train(tmp_path / str(fast), fast, max_iters=21) for fast in (True, False)]
    assert_same_batches(runs[0][1].train, runs[1][1].train)
    assert_same_state(final_state(runs[0][0]), final_state(runs[1][0]))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[dict, list[Any]]:
    """toy.py's run with the fast path, checked against the DataLoader path: its final state
    and its training batches."""
    states, batches = [], []
    for fast in (True, False):
        record = RecordBatches()
        runner = make_runner(tmp_path_factory.mktemp(f"fast_{fast}"), hooks=[record],
                             fast_data=fast)
        runner.train()
        states.append(final_state(runner))
        batches.append(record.train)
    assert_same_batches(batches[0], batches[1])
    assert_same_state(states[0], states[1])
    return states[0], batches[0]


# 8 batches an epoch: stopped in the first epoch, and in the second
@pytest.mark.parametrize("stop_at, resume_fast", [(3, True), (12, True), (12, False)])
def test_a_resume_mid_epoch_is_bit_identical_both_ways(tmp_path, uninterrupted, stop_at,
                                                       resume_fast):
    reference, reference_batches = uninterrupted
    stopped = make_runner(tmp_path, hooks=[Explode(stop_at)], checkpoint_every=1,
                          default_hooks={"logger": {"type": "LoggerHook", "interval": 5}})
    with pytest.raises(HookError, match="Explode"):
        stopped.train()
    assert read_latest(tmp_path).name == f"iter_{stop_at - 1}.pth"
    record = RecordBatches()
    resumed = make_runner(tmp_path, checkpoint_every=1, resume="auto", hooks=[record],
                          fast_data=resume_fast)
    resumed.train()
    assert_same_batches(record.train, reference_batches[stop_at - 1:])
    assert_same_state(final_state(resumed), reference)


def test_the_run_header_says_which_path_each_loader_takes(tmp_path):
    data = tensors(16)
    runner = Runner(torch.nn.Linear(6, 3), optimizer={"type": "SGD", "lr": 0.1},
                    loss_fn=torch.nn.CrossEntropyLoss(), max_epochs=1, device="cpu",
                    train_dataloader=DataLoader(data, batch_size=4, num_workers=1),
                    val_dataloader=DataLoader(data, batch_size=4, collate_fn=counting_collate([])),
                    test_dataloader=DataLoader(data, batch_size=4), work_dir=tmp_path)
    assert runner.fast_data is True
    assert run_header(runner)[2] == ("batches: train DataLoader (num_workers=1); val DataLoader "
                                     "(a custom collate_fn); test fast path (indexing a "
                                     "TensorDataset)")
    runner.fast_data = False
    assert run_header(runner)[2].endswith("test DataLoader (fast_data=False)")
