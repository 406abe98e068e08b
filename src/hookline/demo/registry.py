"""The demo's names in the config registries: ``DigitsCNN`` (MODELS) and ``DigitsDataset`` (DATASETS).

Config files name them like any other registered class; ``hookline train``
with no config trains :data:`CONFIG_FILE`, the packaged demo config.
Importing this module imports torch (``hookline.core`` never does);
:mod:`hookline.app` imports it before it checks or builds a config.

Example::

    >>> from hookline.engine.registries import DATASETS, MODELS
    >>> import hookline.demo.registry
    >>> val = DATASETS.build({"type": "DigitsDataset", "split": "val"})
    >>> len(val), type(MODELS.build({"type": "DigitsCNN"})).__name__
    (181, 'DigitsCNN')
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from torch.utils.data import TensorDataset

from hookline.core import ConfigError
from hookline.demo.data import digits_splits
from hookline.demo.model import DigitsCNN
from hookline.engine.checks import finite_float
from hookline.engine.registries import DATASETS, MODELS

__all__ = ["CONFIG_FILE", "DigitsDataset", "demo_config_path"]

#: name of the packaged demo config, inside ``hookline.demo``
CONFIG_FILE = "config.yaml"

SPLITS = ("train", "val", "test", "all")


class DigitsDataset(TensorDataset):
    """One split of the UCI digits as ``(image, label)`` pairs (see :func:`digits_datasets`).

    Args:
        split: ``"train"`` (1,438 images with the defaults), ``"val"`` (181), ``"test"``
            (178: ``"val"`` and ``"test"`` are stratified halves of the 359 held out) or
            ``"all"`` (1,797).
        val_fraction: share of each digit held out from ``"train"`` for ``"val"`` and ``"test"``.
        seed: seed of the split (the same seed gives the same split; the global RNG is untouched).

    Example::

        >>> len(DigitsDataset("train")), len(DigitsDataset("test")), len(DigitsDataset("all"))
        (1438, 178, 1797)
    """

    def __init__(self, split: str = "train", val_fraction: float = 0.2, seed: int = 0) -> None:
        self.check_args(split=split, val_fraction=val_fraction, seed=seed)
        splits = digits_splits(val_fraction=0.0 if split == "all" else val_fraction, seed=seed)
        super().__init__(*splits["train" if split == "all" else split].tensors)
        self.split = split

    @staticmethod
    def check_args(split: str = "train", val_fraction: float = 0.2, seed: int = 0) -> None:
        """The constructor's argument checks, loading nothing (a config check calls this).

        Example::

            >>> DigitsDataset.check_args(split="tarin")  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            hookline.core.errors.ConfigError: DigitsDataset split must be one of ... got 'tarin'
        """
        if split not in SPLITS:
            raise ConfigError(f"DigitsDataset split must be one of {', '.join(SPLITS)}; got {split!r}")
        finite_float(val_fraction, "val_fraction", owner="DigitsDataset", low=0, high=1,
                     open_low=True, open_high=True)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ConfigError(f"DigitsDataset seed must be an int, got {seed!r}")

    def __repr__(self) -> str:
        return f"DigitsDataset(split={self.split!r}, size={len(self)})"


def demo_config_path() -> Path:
    """The path of the packaged demo config (``hookline/demo/config.yaml``)."""
    ref = resources.files("hookline.demo") / CONFIG_FILE
    return Path(str(ref))


if "DigitsCNN" not in MODELS:
    MODELS.register(DigitsCNN, name="DigitsCNN")
if "DigitsDataset" not in DATASETS:
    DATASETS.register(DigitsDataset, name="DigitsDataset")
