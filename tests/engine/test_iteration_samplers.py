"""Iteration-based runs over samplers that yield past ``len()`` (MMEngine's ``InfiniteSampler``,
mmseg's iteration configs): exact resume, the skip done in the sampler (nothing loaded), the
``sampler=`` dataloader config, and the checkpoint meta check."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler, Sampler, TensorDataset

from hookline import Hook, HookError, Runner
from hookline.core import ConfigError
from hookline.engine.checkpoint import CheckpointError
from hookline.engine.checkpoint.fit import meta_problem
from hookline.engine.data import ends_at_length
from hookline.engine.fast_batches import iter_batches_after
from hookline.engine.samplers import InfiniteSampler, check_sampler_config


class Toy(Dataset):
    """26 seeded samples (not a multiple of the batch size); counts the samples it loads."""

    def __init__(self, n: int = 26) -> None:
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 4, generator=generator)
        self.y = (self.x[:, 0] > 0).long()
        self.loaded = 0

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int):
        self.loaded += 1
        return self.x[index], self.y[index]


class MMEngineInfiniteSampler(Sampler):
    """MMEngine 0.10's InfiniteSampler, one process: a persistent stream that each iter() goes on."""

    def __init__(self, dataset, shuffle: bool = True, seed: int = 0) -> None:
        self.size, self.shuffle, self.seed = len(dataset), shuffle, seed
        self.indices = self._infinite_indices()

    def _infinite_indices(self):
        generator = torch.Generator().manual_seed(self.seed)
        while True:
            if self.shuffle:
                yield from torch.randperm(self.size, generator=generator).tolist()
            else:
                yield from torch.arange(self.size).tolist()

    def __iter__(self):
        yield from self.indices

    def __len__(self) -> int:
        return self.size

    def set_epoch(self, epoch: int) -> None:
        pass


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class Crash(Hook):
    def __init__(self, at: int) -> None:
        self.at = at

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        if runner.iter + 1 == self.at:
            raise RuntimeError("power cut")


class Batches(Hook):
    """The (batch_idx, labels) of every training batch."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, list[int]]] = []

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self.seen.append((batch_idx, data_batch[1].tolist()))


def make(work_dir, loader, hooks=(), max_iters=33, seed=0, **kwargs):
    return Runner(Net(), work_dir=work_dir, train_dataloader=loader,
                  loss_fn=torch.nn.CrossEntropyLoss(),
                  optim_wrapper={"optimizer": {"type": "SGD", "lr": 0.1, "momentum": 0.9}},
                  max_iters=max_iters, hooks=list(hooks), seed=seed,
                  default_hooks={"progress": None, "logger": None,
                                 "checkpoint": {"type": "CheckpointHook", "by_epoch": False,
                                                "interval": 6}}, **kwargs)


def same_weights(a: Runner, b: Runner) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(),
                                                b.model.state_dict().values()))


def endless_loader(shuffle: bool, dataset: Toy | None = None) -> DataLoader:
    dataset = dataset or Toy()
    return DataLoader(dataset, batch_size=4, sampler=MMEngineInfiniteSampler(dataset, shuffle))


# -- resume over an endless sampler ------------------------------------------------------------
@pytest.mark.parametrize("shuffle", [False, True])
def test_an_endless_sampler_resumes_exactly_past_its_first_round(tmp_path, shuffle):
    whole = Batches()
    reference = make(tmp_path / "ref", endless_loader(shuffle), [whole])
    reference.train()
    # one pass that never ends: positions run past len(loader) == 7
    assert [i for i, _ in whole.seen] == list(range(33))

    work = tmp_path / "run"
    with pytest.raises(HookError):
        make(work, endless_loader(shuffle), [Crash(24)]).train()
    # MMEngine's way (resume=True, load_from=...), then a path, past the first round (7)
    for kwargs in ({"resume": True, "load_from": str(work / "iter_18.pth")},
                   {"resume": str(work / "iter_12.pth")}):
        dataset = Toy()
        seen = Batches()
        resumed = make(work, endless_loader(shuffle, dataset), [seen], **kwargs)
        resumed.train()
        start = 18 if "load_from" in kwargs else 12
        assert seen.seen == whole.seen[start:]
        assert same_weights(resumed, reference)
        # the skipped batches were drawn from the sampler, not loaded
        assert dataset.loaded == 4 * len(seen.seen)


def test_auto_resume_takes_the_newest_checkpoint_past_the_first_round(tmp_path, caplog):
    work = tmp_path / "run"
    with pytest.raises(HookError):
        make(work, endless_loader(True), [Crash(24)]).train()
    seen = Batches()
    resumed = make(work, endless_loader(True), [seen], resume="auto")
    resumed.train()
    assert "skipping checkpoint" not in caplog.text
    assert seen.seen[0][0] == 18 and resumed.iter == 33


def test_a_checkpoint_hook_resumes_the_loader_by_its_own_state(tmp_path):
    """meta['batch'] of an endless pass runs past len(loader); the meta check allows it."""
    work = tmp_path / "run"
    make(work, endless_loader(False), max_iters=20).train()
    meta = torch.load(work / "iter_18.pth", weights_only=True)["meta"]
    assert meta["batch"] == 18 and meta["epoch_length"] == 7 and meta["iter"] == 18


# -- the same with a finite custom sampler: the pass number comes back -------------------------
class FiniteSeeded(Sampler):
    """A custom (kept) sampler: a permutation per epoch, seeded seed + epoch."""

    def __init__(self, size: int, seed: int = 5) -> None:
        self.size, self.seed, self.epoch = size, seed, 0
        self.epochs: list[int] = []

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.epochs.append(epoch)

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(torch.randperm(self.size, generator=generator).tolist())

    def __len__(self) -> int:
        return self.size


def test_a_finite_custom_sampler_resumes_in_the_right_pass(tmp_path):
    def loader():
        data = Toy()
        return DataLoader(data, batch_size=4, sampler=FiniteSeeded(len(data))), data

    whole = Batches()
    ref_loader, _ = loader()
    reference = make(tmp_path / "ref", ref_loader, [whole])
    reference.train()
    work = tmp_path / "run"
    with pytest.raises(HookError):
        make(work, loader()[0], [Crash(20)]).train()
    seen = Batches()
    resumed_loader, data = loader()
    resumed = make(work, resumed_loader, [seen], resume=str(work / "iter_18.pth"))
    resumed.train()
    # iteration 18: batch 4 of pass 3 (passes of 7 batches); pass numbers go on from there
    assert resumed_loader.sampler.epochs[:2] == [2, 3]
    assert seen.seen == whole.seen[18:]
    assert same_weights(resumed, reference)
    assert data.loaded == sum(len(labels) for _, labels in seen.seen)  # the skip loads nothing


# -- hookline's own InfiniteSampler, from a dataloader config ----------------------------------
def mmengine_order(size: int, seed: int, shuffle: bool, count: int) -> list[int]:
    generator = torch.Generator().manual_seed(seed)

    def stream():
        while True:
            if shuffle:
                yield from torch.randperm(size, generator=generator).tolist()
            else:
                yield from range(size)
    return list(itertools.islice(stream(), count))


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_config_infinite_sampler_draws_mmengine_order_and_resumes_exactly(tmp_path, shuffle):
    def config(data):
        return {"dataset": data, "batch_size": 4,
                "sampler": {"type": "InfiniteSampler", "shuffle": shuffle, "seed": 3}}

    whole = Batches()
    data = Toy()
    reference = make(tmp_path / "ref", config(data), [whole])
    assert isinstance(reference.train_dataloader.sampler, InfiniteSampler)
    reference.train()
    order = mmengine_order(26, 3, shuffle, 33 * 4)
    assert [label for _, labels in whole.seen for label in labels] == \
        data.y[order].tolist()
    work = tmp_path / "run"
    with pytest.raises(HookError):
        make(work, config(Toy()), [Crash(22)]).train()
    seen = Batches()
    again = Toy()
    resumed = make(work, config(again), [seen], resume="auto")
    resumed.train()
    assert seen.seen == whole.seen[18:]
    assert same_weights(resumed, reference)
    assert again.loaded == 4 * len(seen.seen)


def test_a_config_infinite_sampler_takes_the_runners_seed_by_default(tmp_path):
    runner = make(tmp_path, {"dataset": Toy(), "batch_size": 4,
                             "sampler": {"type": "mmengine.InfiniteSampler"}}, seed=4)
    sampler = runner.train_dataloader.sampler
    assert isinstance(sampler, InfiniteSampler) and sampler.seed == 4 and sampler.shuffle
    assert len(runner.train_dataloader) == 7 and not ends_at_length(runner.train_dataloader)


def test_a_config_default_sampler_draws_mmengine_order_per_pass(tmp_path):
    whole = Batches()
    data = Toy(24)  # 6 batches a pass
    runner = make(tmp_path, {"dataset": data, "batch_size": 4,
                             "sampler": {"type": "DefaultSampler", "shuffle": True, "seed": 7}},
                  [whole], max_iters=12)
    runner.train()
    expected = [i for epoch in range(2) for i in torch.randperm(
        24, generator=torch.Generator().manual_seed(7 + epoch)).tolist()]
    assert [label for _, labels in whole.seen for label in labels] == data.y[expected].tolist()


def test_an_infinite_sampler_shards_as_mmengines():
    assert list(itertools.islice(InfiniteSampler(range(5), shuffle=True, seed=1, rank=1,
                                                 world_size=2), 6)) == \
        mmengine_order(5, 1, True, 12)[1::2]
    sampler = InfiniteSampler(range(5), shuffle=False)
    assert list(itertools.islice(sampler, 3)) == list(itertools.islice(sampler, 3)) == [0, 1, 2]
    assert list(InfiniteSampler([], shuffle=True)) == []


@pytest.mark.parametrize(("sampler", "extra", "match"), [
    ({"type": "RandomSampler"}, {}, "builds MMEngine's InfiniteSampler or DefaultSampler"),
    ({"type": "InfiniteSampler", "round_up": True}, {}, "unknown InfiniteSampler option"),
    ({"type": "InfiniteSampler"}, {"shuffle": True}, "give shuffle inside sampler"),
    ({"type": "InfiniteSampler", "seed": -1}, {}, "seed must be an int"),
    ("InfiniteSampler", {}, "must be a config such as"),
])
def test_a_sampler_config_hookline_cannot_build_is_one_clear_error(tmp_path, sampler, extra,
                                                                      match):
    with pytest.raises(ConfigError, match=match):
        make(tmp_path, {"dataset": Toy(), "batch_size": 4, "sampler": sampler, **extra})


def test_an_infinite_sampler_is_refused_for_validation(tmp_path):
    with pytest.raises(ConfigError, match="never ends a pass"):
        make(tmp_path, {"dataset": Toy(), "batch_size": 4},
             val_dataloader={"dataset": Toy(), "batch_size": 4,
                             "sampler": {"type": "InfiniteSampler"}}, metrics={})


def test_a_sampler_object_in_a_config_is_kept(tmp_path):
    data = Toy()
    sampler = FiniteSeeded(len(data))
    runner = make(tmp_path, {"dataset": data, "batch_size": 4, "sampler": sampler})
    assert runner.train_dataloader.sampler is sampler
    check_sampler_config(sampler, "train_dataloader")


# -- the skip itself: indices drawn, in the DataLoader's order of draws --------------------------
@pytest.mark.parametrize("fast", [False, True])
def test_skipping_draws_indices_where_the_dataloader_draws_them(fast):
    data = TensorDataset(torch.arange(20.0), torch.arange(20))
    generator = torch.Generator()
    # RandomSampler(generator=the loader's): the pass's seed is drawn first, then the order
    loader = DataLoader(data, batch_size=3, sampler=RandomSampler(data, generator=generator),
                        generator=generator)
    generator.manual_seed(11)
    whole = [batch[1].tolist() for batch in loader]
    generator.manual_seed(11)
    result = iter_batches_after(loader, 4, enabled=fast)
    assert result is not None
    iterator, skipped = result
    assert skipped == 4 and [batch[1].tolist() for batch in iterator] == whole[4:]
    generator.manual_seed(11)
    iterator, skipped = iter_batches_after(loader, 10, enabled=fast)
    assert skipped == 7 and list(iterator) == []


def test_skipping_without_batching_and_with_workers():
    data = Toy(10)
    loader = DataLoader(data, batch_size=None, sampler=MMEngineInfiniteSampler(data, False))
    iterator, skipped = iter_batches_after(loader, 12)
    assert skipped == 12 and int(next(iterator)[1]) == int(data.y[2]) and data.loaded == 1
    data = Toy(10)
    loader = DataLoader(data, batch_size=3, sampler=FiniteSeeded(10), num_workers=1)
    whole = [batch[1].tolist() for batch in loader]
    iterator, skipped = iter_batches_after(loader, 2)
    assert skipped == 2 and [batch[1].tolist() for batch in iterator] == whole[2:]


def test_loaders_that_cannot_skip_by_index_are_read_instead():
    class Mine(DataLoader):
        pass

    assert iter_batches_after(Mine(list(range(10)), batch_size=2), 1) is None
    assert iter_batches_after([1, 2, 3], 1) is None


# -- the meta check --------------------------------------------------------------------------------
def test_the_meta_check_allows_a_pass_past_len_in_an_iteration_run():
    meta = {"epoch": 0, "iter": 18, "batch": 18, "epoch_length": 7}
    assert meta_problem(meta, by_epoch=False, epoch_length=7) is None
    damaged = meta_problem({**meta, "batch": 19}, by_epoch=False, epoch_length=7)
    assert damaged is not None and "more than the run's iterations" in damaged
    epochs = meta_problem({**meta, "epoch": 1}, by_epoch=True, epoch_length=7)
    assert epochs is not None and "an endless sampler such as InfiniteSampler" in epochs \
        and "max_iters" in epochs


def test_a_damaged_pass_position_is_refused_on_resume(tmp_path):
    work = tmp_path / "run"
    make(work, endless_loader(False), max_iters=12).train()
    checkpoint = torch.load(work / "iter_12.pth", weights_only=True)
    checkpoint["meta"]["batch"] = 40
    torch.save(checkpoint, work / "damaged.pth")
    with pytest.raises(CheckpointError, match="more than the run's iterations"):
        make(work, endless_loader(False), resume=str(work / "damaged.pth")).train()
