"""The demo data: UCI optical handwritten digits, 1,797 8x8 images of 0..9.

The data ships inside the package as ``digits.npz`` (see ``DATA_LICENSE.md``
for its source and licence, CC BY 4.0): ``images`` uint8 of shape
(1797, 8, 8) with values 0..16, ``labels`` uint8 0..9.

Example::

    >>> from hookline.demo import load_digits, digits_datasets
    >>> images, labels = load_digits()
    >>> tuple(images.shape), images.dtype, int(labels.max())
    ((1797, 1, 8, 8), torch.float32, 9)
    >>> train_ds, val_ds = digits_datasets(val_fraction=0.2, seed=0)
    >>> len(train_ds) + len(val_ds)
    1797
    >>> {name: len(ds) for name, ds in digits_splits().items()}  # the held-out 359 halved
    {'train': 1438, 'val': 181, 'test': 178}
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import torch
from torch.utils.data import TensorDataset

from hookline.core.errors import ConfigError

__all__ = ["DATA_FILE", "NUM_CLASSES", "digits_datasets", "digits_splits", "load_digits"]

#: File name of the packaged data, inside ``hookline.demo``.
DATA_FILE = "digits.npz"
#: Number of classes (the digits 0..9).
NUM_CLASSES = 10
_MAX_PIXEL = 16.0


def _read_npz() -> tuple[np.ndarray, np.ndarray]:
    ref = resources.files("hookline.demo") / DATA_FILE
    try:
        with ref.open("rb") as stream, np.load(stream, allow_pickle=False) as npz:
            images = np.asarray(npz["images"])
            labels = np.asarray(npz["labels"])
    except FileNotFoundError:
        raise FileNotFoundError(
            f"the demo data file hookline/demo/{DATA_FILE} is missing from this installation "
            "(was the package built without its package data?)"
        ) from None
    if images.ndim != 3 or images.shape[1:] != (8, 8) or labels.shape != (images.shape[0],):
        raise RuntimeError(
            f"hookline/demo/{DATA_FILE} is damaged: images {images.shape}, labels {labels.shape}; "
            "expected (N, 8, 8) and (N,)"
        )
    return images, labels


def load_digits() -> tuple[torch.Tensor, torch.Tensor]:
    """All 1,797 digits as ``(images, labels)``.

    ``images`` is float32 of shape (N, 1, 8, 8) scaled to [0, 1] (pixel / 16);
    ``labels`` is int64 of shape (N,) with values 0..9. Each call returns new
    tensors.

    Example::

        >>> images, labels = load_digits()
        >>> float(images.min()), float(images.max()), labels.dtype
        (0.0, 1.0, torch.int64)
    """
    images, labels = _read_npz()
    x = torch.from_numpy(images.astype(np.float32) / _MAX_PIXEL).unsqueeze(1)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def _stratified_split(
    labels: torch.Tensor, val_fraction: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Train, validation and test indices: from each class, ``round(n * val_fraction)``
    random samples are held out, the first half of them (rounded up) for validation and
    the rest for test. Uses its own generator; the global RNG is untouched."""
    generator = torch.Generator().manual_seed(seed)
    parts: tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]] = ([], [], [])
    for cls in torch.unique(labels).tolist():
        members = torch.nonzero(labels == cls, as_tuple=True)[0]
        members = members[torch.randperm(len(members), generator=generator)]
        n_val = int(round(len(members) * val_fraction))
        n_half = (n_val + 1) // 2
        parts[0].append(members[n_val:])
        parts[1].append(members[:n_half])
        parts[2].append(members[n_half:n_val])
    train_idx, val_idx, test_idx = (torch.sort(torch.cat(p)).values for p in parts)
    return train_idx, val_idx, test_idx


def _check_split_args(val_fraction: float, seed: int, owner: str) -> None:
    if (
        isinstance(val_fraction, bool)
        or not isinstance(val_fraction, (int, float))
        or not (0.0 <= val_fraction < 1.0)
    ):
        raise ConfigError(f"{owner}: val_fraction must be a number in [0, 1), got {val_fraction!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"{owner}: seed must be an int, got {seed!r}")


def digits_splits(val_fraction: float = 0.2, seed: int = 0) -> dict[str, TensorDataset]:
    """The digits as ``{"train": ..., "val": ..., "test": ...}`` :class:`TensorDataset` s.

    ``train`` is the same as :func:`digits_datasets`' (1,438 images with the
    defaults); the held-out share (``val_fraction`` of each digit, 359 images)
    is split in two stratified halves: ``val`` (181) and ``test`` (178).
    Depends only on ``seed``, never on the global RNG state.

    Example::

        >>> splits = digits_splits()
        >>> sum(len(ds) for ds in splits.values())
        1797
    """
    _check_split_args(val_fraction, seed, "digits_splits")
    images, labels = load_digits()
    indices = _stratified_split(labels, float(val_fraction), seed)
    return {name: TensorDataset(images[idx], labels[idx])
            for name, idx in zip(("train", "val", "test"), indices)}


def digits_datasets(val_fraction: float = 0.2, seed: int = 0) -> tuple[TensorDataset, TensorDataset]:
    """The digits split into ``(train_ds, held_out_ds)`` :class:`~torch.utils.data.TensorDataset` s
    (:func:`digits_splits` halves the held-out share into validation and test).

    The split is stratified (each digit is split in the same proportion) and
    depends only on ``seed``, never on the global RNG state. Each item is
    ``(image, label)``: a float32 (1, 8, 8) tensor and an int64 scalar.
    ``val_fraction`` must be in [0, 1); 0 gives an empty validation set.

    Example::

        >>> train_ds, val_ds = digits_datasets(val_fraction=0.2, seed=0)
        >>> len(train_ds), len(val_ds)
        (1438, 359)
        >>> image, label = train_ds[0]
        >>> tuple(image.shape), label.dtype
        ((1, 8, 8), torch.int64)
    """
    _check_split_args(val_fraction, seed, "digits_datasets")
    images, labels = load_digits()
    train_idx, val_idx, test_idx = _stratified_split(labels, float(val_fraction), seed)
    held_out = torch.sort(torch.cat([val_idx, test_idx])).values
    return (
        TensorDataset(images[train_idx], labels[train_idx]),
        TensorDataset(images[held_out], labels[held_out]),
    )
