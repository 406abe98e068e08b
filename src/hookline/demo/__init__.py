"""The embedded demo: the UCI handwritten digits data and a small CNN for it.

Example::

    >>> from hookline.demo import build_model, digits_datasets
    >>> train_ds, val_ds = digits_datasets()
    >>> model = build_model()
    >>> image, label = val_ds[0]
    >>> tuple(model(image.unsqueeze(0)).shape)
    (1, 10)
"""

from hookline.core.dependencies import raise_missing as _raise_missing

try:  # first: without PyTorch, one error saying what to install
    import torch as _torch  # noqa: F401
except ModuleNotFoundError as _exc:
    _raise_missing(_exc, "hookline.demo")

from hookline.demo.data import DATA_FILE, NUM_CLASSES, digits_datasets, load_digits
from hookline.demo.model import DigitsCNN, build_model

__all__ = ["DATA_FILE", "NUM_CLASSES", "DigitsCNN", "build_model", "digits_datasets", "load_digits"]
