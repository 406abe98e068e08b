"""The demo data and model: shapes, the split, and that a plain training loop learns."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hookline.core.errors import ConfigError
from hookline.demo import DigitsCNN, build_model, digits_datasets, load_digits
from hookline.demo.data import digits_splits
from hookline.demo.registry import DigitsDataset

# Settings the 10-epoch numbers in the report were measured with.
EPOCHS = 10
BATCH_SIZE = 32
LR = 3e-3
THREADS = 1


def test_load_digits_shapes_and_labels() -> None:
    images, labels = load_digits()
    assert images.shape == (1797, 1, 8, 8) and images.dtype == torch.float32
    assert labels.shape == (1797,) and labels.dtype == torch.int64
    assert float(images.min()) == 0.0 and float(images.max()) == 1.0
    counts = torch.bincount(labels, minlength=10)
    assert counts.tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    # values are k/16 for integer k
    assert torch.equal(images * 16, torch.round(images * 16))
    # new tensors each call
    again, _ = load_digits()
    again.zero_()
    assert float(load_digits()[0].max()) == 1.0


def test_split_is_stratified_deterministic_and_leaves_global_rng_alone() -> None:
    torch.manual_seed(123)
    before = torch.get_rng_state()
    train_ds, val_ds = digits_datasets(val_fraction=0.2, seed=0)
    assert torch.equal(torch.get_rng_state(), before)
    assert isinstance(train_ds, TensorDataset) and isinstance(val_ds, TensorDataset)
    assert len(train_ds) + len(val_ds) == 1797
    assert len(val_ds) == 359
    val_counts = torch.bincount(val_ds.tensors[1], minlength=10)
    all_counts = torch.bincount(load_digits()[1], minlength=10)
    assert torch.all((val_counts - all_counts * 0.2).abs() <= 0.5 + 1e-9)

    train2, val2 = digits_datasets(val_fraction=0.2, seed=0)
    assert torch.equal(val2.tensors[0], val_ds.tensors[0]) and torch.equal(
        train2.tensors[1], train_ds.tensors[1]
    )
    _, val3 = digits_datasets(val_fraction=0.2, seed=1)
    assert not torch.equal(val3.tensors[0], val_ds.tensors[0])

    # no overlap between train and val: compare flattened images with labels as rows
    def rows(ds: TensorDataset) -> set[bytes]:
        x, y = ds.tensors
        return {
            bytes(x[i].mul(16).to(torch.uint8).flatten().tolist()) + bytes([int(y[i])]) for i in range(len(y))
        }

    images, labels = load_digits()
    assert len(rows(TensorDataset(images, labels))) == 1797  # no duplicate samples in the data
    assert not rows(train_ds) & rows(val_ds)


def _rows(ds: TensorDataset) -> set[bytes]:
    x, y = ds.tensors
    return {bytes(x[i].mul(16).to(torch.uint8).flatten().tolist()) + bytes([int(y[i])])
            for i in range(len(y))}


def test_val_and_test_are_stratified_halves_of_the_held_out_images() -> None:
    train_ds, held_out = digits_datasets(val_fraction=0.2, seed=0)
    splits = digits_splits(val_fraction=0.2, seed=0)
    # training data unchanged by the test split
    assert all(torch.equal(a, b) for a, b in zip(splits["train"].tensors, train_ds.tensors))
    val, test = splits["val"], splits["test"]
    assert (len(val), len(test)) == (181, 178)
    assert not _rows(val) & _rows(test) and _rows(val) | _rows(test) == _rows(held_out)
    val_counts, test_counts = (torch.bincount(ds.tensors[1], minlength=10) for ds in (val, test))
    assert torch.all((val_counts - test_counts).abs() <= 1) and int(test_counts.min()) >= 17
    for split, dataset in (("train", train_ds), ("val", val), ("test", test)):
        built = DigitsDataset(split)
        assert all(torch.equal(a, b) for a, b in zip(built.tensors, dataset.tensors)), split
    assert repr(DigitsDataset("test")) == "DigitsDataset(split='test', size=178)"
    with pytest.raises(ConfigError, match="train, val, test, all"):
        DigitsDataset("testing")


def test_split_arguments() -> None:
    train_ds, val_ds = digits_datasets(val_fraction=0.0)
    assert len(train_ds) == 1797 and len(val_ds) == 0
    for bad in (1.0, -0.1, "0.2", True):
        with pytest.raises(ConfigError, match="val_fraction"):
            digits_datasets(val_fraction=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="seed"):
        digits_datasets(seed=1.5)  # type: ignore[arg-type]


def test_model_shapes() -> None:
    model = build_model()
    assert isinstance(model, DigitsCNN)
    assert model(torch.zeros(5, 1, 8, 8)).shape == (5, 10)
    assert DigitsCNN(num_classes=3)(torch.zeros(2, 1, 8, 8)).shape == (2, 3)
    assert sum(p.numel() for p in model.parameters()) == 38282


def test_plain_training_loop_reaches_95_percent() -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    try:
        torch.manual_seed(0)
        train_ds, val_ds = digits_datasets(val_fraction=0.2, seed=0)
        model = build_model()
        optimizer = torch.optim.Adam(model.parameters(), lr=LR)
        loader = DataLoader(
            train_ds, batch_size=BATCH_SIZE, shuffle=True, generator=torch.Generator().manual_seed(0)
        )
        for _ in range(EPOCHS):
            model.train()
            for inputs, targets in loader:
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(inputs), targets)
                loss.backward()
                optimizer.step()
        model.eval()
        with torch.no_grad():
            inputs, targets = val_ds.tensors
            accuracy = (model(inputs).argmax(dim=1) == targets).float().mean().item()
    finally:
        torch.set_num_threads(threads)
    assert accuracy >= 0.95
