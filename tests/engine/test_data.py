"""Data order as a function of (seed, epoch): EpochSampler, rebuilding DataLoaders around it,
skipping batches once after a resume, and moving batches to a device with their structure."""

from __future__ import annotations

import collections
import dataclasses
import logging

import pytest
import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    TensorDataset,
)

from hookline import ConfigError, Runner
from hookline.engine.data import (
    EpochSampler,
    build_dataloader,
    check_has_batches,
    move_to,
    set_epoch,
    skip_batches,
)
from hookline.engine.data_pass import start_pass

LOGGER = logging.getLogger("test_data")


def dataset(n: int = 20) -> TensorDataset:
    return TensorDataset(torch.arange(n, dtype=torch.float32).unsqueeze(1), torch.arange(n))


def build(spec, **kwargs):
    options = dict(seed=0, rank=0, world_size=1, logger=LOGGER)
    options.update(kwargs)
    return build_dataloader(spec, **options)


def order(loader: DataLoader) -> list[int]:
    return [int(i) for _, targets in loader for i in targets]


# -- EpochSampler --------------------------------------------------------------------------------

def test_shuffled_order_is_a_permutation_fixed_by_seed_and_epoch():
    first = EpochSampler(range(10), shuffle=True, seed=3)
    second = EpochSampler(range(10), shuffle=True, seed=3)
    assert sorted(first) == list(range(10)) and len(first) == 10
    assert list(first) == list(second) == list(first)  # repeatable, whatever the global RNG
    torch.manual_seed(123)
    assert list(EpochSampler(range(10), shuffle=True, seed=3)) == list(first)
    epoch0 = list(first)
    first.set_epoch(1)
    assert list(first) != epoch0 and sorted(first) == list(range(10))
    second.set_epoch(1)
    assert list(first) == list(second)
    first.set_epoch(0)
    assert list(first) == epoch0
    assert list(EpochSampler(range(10), shuffle=True, seed=4)) != epoch0


def test_unshuffled_order_is_sequential_in_every_epoch():
    sampler = EpochSampler(range(7), shuffle=False)
    assert list(sampler) == list(range(7))
    sampler.set_epoch(5)
    assert list(sampler) == list(range(7))


def test_skip_batches_skips_exactly_that_many_batches_once():
    sampler = EpochSampler(range(12), shuffle=True, seed=0, batch_size=3)
    sampler.set_epoch(2)
    full = list(sampler)
    sampler.skip_batches(2)
    assert list(sampler) == full[6:]
    assert list(sampler) == full  # the next pass is whole again


# -- build_dataloader ----------------------------------------------------------------------------

def test_a_shuffling_dataloader_is_rebuilt_around_an_epoch_sampler_with_the_same_options():
    original = DataLoader(dataset(), batch_size=4, shuffle=True, drop_last=True)
    loader = build(original)
    assert isinstance(loader.sampler, EpochSampler) and loader.sampler.shuffle
    assert loader.batch_size == 4 and loader.drop_last and len(loader) == 5
    assert sorted(order(loader)) == list(range(20))
    # the order depends on the seed, not on the global RNG
    torch.manual_seed(1)
    a = order(loader)
    torch.manual_seed(2)
    assert order(loader) == a == order(build(DataLoader(dataset(), batch_size=4, shuffle=True)))
    assert order(build(original, seed=1)) != a


def test_a_sequential_dataloader_stays_in_order():
    loader = build(DataLoader(dataset(), batch_size=6))
    assert isinstance(loader.sampler, EpochSampler) and not loader.sampler.shuffle
    assert order(loader) == list(range(20)) and len(loader) == 4


def test_set_epoch_changes_the_order_and_skip_batches_resumes_inside_it():
    loader = build(DataLoader(dataset(), batch_size=4, shuffle=True))
    epoch0 = order(loader)
    set_epoch(loader, 1)
    epoch1 = order(loader)
    assert epoch1 != epoch0 and sorted(epoch1) == list(range(20))
    assert skip_batches(loader, 3) is True
    assert order(loader) == epoch1[12:]
    assert order(loader) == epoch1
    set_epoch(loader, 0)
    assert order(loader) == epoch0


def test_a_config_dict_builds_a_loader():
    loader = build({"dataset": dataset(), "batch_size": 5, "shuffle": False})
    assert order(loader) == list(range(20)) and len(loader) == 4
    shuffled = build({"dataset": dataset(), "batch_size": 5})  # training default: shuffle
    assert shuffled.sampler.shuffle
    evaluation = build({"dataset": dataset(), "batch_size": 5}, shuffle_default=False)
    assert not evaluation.sampler.shuffle


def test_config_dict_errors_name_what_is_accepted():
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['batchsize'\]") as info:
        build({"dataset": dataset(), "batchsize": 4}, name="train_dataloader")
    assert "train_dataloader" in str(info.value) and "batch_size" in str(info.value)
    with pytest.raises(ConfigError, match="needs a 'dataset' entry"):
        build({"batch_size": 4})
    with pytest.raises(ConfigError, match="DataLoader or a config dict"):
        build(dataset())
    assert build(None) is None


def test_a_custom_sampler_is_kept_with_a_warning(caplog):
    class Reverse(Sampler[int]):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n - 1, -1, -1))

        def __len__(self):
            return self.n

    original = DataLoader(dataset(), batch_size=5, sampler=Reverse(20))
    with caplog.at_level(logging.WARNING, logger="test_data"):
        loader = build(original, name="train_dataloader")
    assert loader is original and order(loader) == list(range(19, -1, -1))
    assert "train_dataloader has a custom sampler" in caplog.text
    assert skip_batches(loader, 1) is False  # nothing it can skip without reading


def test_a_subclass_of_a_torch_sampler_is_the_users_and_kept(caplog):
    class Evens(RandomSampler):
        def __iter__(self):
            return iter(i for i in super().__iter__() if i % 2 == 0)

        def __len__(self):
            return len(self.data_source) // 2

    data = dataset()
    for sampler in (Evens(data), RandomSampler(data, replacement=True),
                    RandomSampler(data, num_samples=5)):
        original = DataLoader(data, batch_size=5, sampler=sampler)
        with caplog.at_level(logging.WARNING, logger="test_data"):
            assert build(original, name="train_dataloader") is original
        assert f"custom sampler ({type(sampler).__name__})" in caplog.text
    torch.manual_seed(0)
    kept = build(DataLoader(data, batch_size=5, sampler=Evens(data)))
    assert all(i % 2 == 0 for i in order(kept))
    # a mid-epoch resume reads and drops the batches done: the rest of the same order
    torch.manual_seed(0)
    full = order(kept)
    torch.manual_seed(0)
    iterator, skipped = start_pass(kept, 1)
    assert skipped == 1 and [int(i) for _, t in iterator for i in t] == full[5:]


@pytest.mark.parametrize("drop_last,shuffle,pad", [(True, True, True), (False, True, True),
                                                   (False, False, True), (True, True, False)])
def test_a_distributed_sampler_is_replaced_by_its_own_order(drop_last, shuffle, pad):
    """Its seed, drop_last and permutation are kept: the ranks see what it would give them."""
    data = dataset(21)
    for rank in (0, 1):
        sampler = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=shuffle, seed=123,
                                     drop_last=drop_last)
        loader = build(DataLoader(data, batch_size=4, sampler=sampler), rank=rank, world_size=2,
                       pad=pad)
        assert isinstance(loader.sampler, EpochSampler)
        for epoch in (0, 3):
            sampler.set_epoch(epoch)
            set_epoch(loader, epoch)
            if pad or drop_last:
                assert order(loader) == list(sampler)
            else:  # evaluation without drop_last: shards not padded, every sample once
                assert order(loader) == list(sampler)[: len(range(rank, 21, 2))]
        assert len(loader.sampler) == (10 if drop_last else 11 if pad or rank == 0 else 10)


# -- move_to -------------------------------------------------------------------------------------

Pair = collections.namedtuple("Pair", ["inputs", "targets"])


def test_move_to_keeps_the_structure_of_dicts_lists_tuples_and_namedtuples():
    x, y = torch.ones(2), torch.zeros(2)
    meta = {"id": "a", "n": 3}
    batch = {"pair": Pair(x, y), "list": [x, (y, "text")], "meta": meta, "tensor": x}
    moved = move_to(batch, torch.device("cpu"))
    assert type(moved) is dict and set(moved) == set(batch)
    assert type(moved["pair"]) is Pair and moved["pair"].inputs is x and moved["pair"].targets is y
    assert type(moved["list"]) is list and type(moved["list"][1]) is tuple
    assert moved["list"][1][1] == "text" and moved["meta"] == meta
    assert moved["tensor"] is x  # already there: the same tensor
    assert type(move_to((x, y), torch.device("cpu"))) is tuple
    assert move_to("just text", torch.device("cpu")) == "just text"


def test_move_to_changes_the_device_of_every_tensor():
    # "meta" is a device every torch build has
    target = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("meta")
    batch = {"pair": Pair(torch.ones(2), torch.zeros(2)), "list": [torch.ones(1)], "n": 1}
    moved = move_to(batch, target)
    assert moved["pair"].inputs.device.type == target.type and type(moved["pair"]) is Pair
    assert moved["list"][0].device.type == target.type and moved["n"] == 1


def test_a_loader_built_with_batch_sampler_keeps_its_batches():
    """``DataLoader(batch_sampler=BatchSampler(...))`` has batch_size None: the rebuilt loader
    takes the batch sampler's size and drop_last."""
    data = dataset(12)
    for drop_last, sizes in ((False, [5, 5, 2]), (True, [5, 5])):
        given = DataLoader(data, batch_sampler=BatchSampler(SequentialSampler(data), 5, drop_last))
        built = build(given)
        assert [len(targets) for _, targets in built] == sizes
        assert order(built) == order(given)


def test_a_dataloader_subclass_is_kept_with_its_own_batches(caplog):
    class DictLoader(DataLoader):
        def __iter__(self):
            for inputs, targets in super().__iter__():
                yield {"x": inputs, "y": targets}

    given = DictLoader(dataset(8), batch_size=4, shuffle=True)
    with caplog.at_level(logging.WARNING, logger="test_data"):
        assert build(given) is given
    assert "DictLoader (a DataLoader subclass): kept as is" in caplog.text


@pytest.mark.parametrize(("loader", "training", "message"), [
    (DataLoader(dataset(0), batch_size=4), True, "its dataset has 0 samples"),
    (DataLoader(dataset(3), batch_size=8, drop_last=True), True,
     "its dataset has 3 samples, fewer than batch_size=8, and drop_last=True drops them"),
    (DataLoader(dataset(0), batch_size=4), False, "its dataset has 0 samples"),
])
def test_a_loader_with_nothing_to_run_is_one_config_error(loader, training, message):
    with pytest.raises(ConfigError, match=f"loader gives no batches: {message}"):
        check_has_batches(loader, "loader", training=training)
    check_has_batches(DataLoader(dataset(3), batch_size=8), "loader", training=True)


def test_an_empty_training_set_is_refused_when_the_runner_is_built(tmp_path):
    for kwargs in ({"max_epochs": 2}, {"max_iters": 5}):  # was: a silent no-op / ZeroDivisionError
        with pytest.raises(ConfigError, match="train_dataloader gives no batches"):
            Runner(torch.nn.Linear(1, 2), optimizer={"type": "SGD", "lr": 0.1},
                   loss_fn=torch.nn.CrossEntropyLoss(), work_dir=tmp_path,
                   train_dataloader=DataLoader(dataset(0), batch_size=4), **kwargs)


def test_move_to_keeps_dataclasses_and_mapping_types():
    @dataclasses.dataclass
    class Batch:
        x: torch.Tensor
        lengths: list

    meta = torch.device("meta")
    moved = move_to(Batch(torch.ones(2), [torch.ones(1)]), meta)
    assert isinstance(moved, Batch) and moved.x.device == meta and moved.lengths[0].device == meta
    ordered = move_to(collections.OrderedDict(b=torch.ones(1), a=torch.ones(1)), meta)
    assert type(ordered) is collections.OrderedDict and list(ordered) == ["b", "a"]
    default = move_to(collections.defaultdict(list, a=torch.ones(1)), meta)
    assert type(default) is collections.defaultdict and default.default_factory is list
    assert default["a"].device == meta
