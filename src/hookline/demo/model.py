"""The demo model: a small CNN for the 8x8 digits.

Example::

    >>> import torch
    >>> from hookline.demo import build_model
    >>> model = build_model()
    >>> tuple(model(torch.zeros(4, 1, 8, 8)).shape)
    (4, 10)
"""

from __future__ import annotations

import torch
from torch import nn

from hookline.engine.checks import positive_int

__all__ = ["DigitsCNN", "build_model"]


class DigitsCNN(nn.Module):
    """Two 3x3 convolutions, a 2x2 max-pool and two linear layers (38,282 parameters).

    Input: float images of shape (N, 1, 8, 8); output: logits of shape
    (N, num_classes). Layers: conv 1->16, ReLU, conv 16->32, ReLU, maxpool 2,
    flatten, linear 512->64, ReLU, linear 64->num_classes.

    Example::

        >>> import torch
        >>> model = DigitsCNN()
        >>> logits = model(torch.rand(2, 1, 8, 8))
        >>> tuple(logits.shape)
        (2, 10)
    """

    def __init__(self, num_classes: int = 10) -> None:
        self.check_args(num_classes=num_classes)
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(32 * 4 * 4, 64),
            nn.ReLU(),
            nn.Linear(64, num_classes),
        )

    @staticmethod
    def check_args(num_classes: int = 10) -> None:
        """The constructor's argument checks, building nothing (a config check calls this).

        Example::

            >>> DigitsCNN.check_args(num_classes=0)
            Traceback (most recent call last):
            ...
            hookline.core.errors.ConfigError: DigitsCNN num_classes must be an int >= 1, got 0
        """
        positive_int(num_classes, "num_classes", owner="DigitsCNN")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits for a batch of (N, 1, 8, 8) images."""
        return self.classifier(self.features(x))


def build_model(num_classes: int = 10) -> DigitsCNN:
    """A freshly initialised :class:`DigitsCNN` (its weights come from the global torch RNG).

    Example::

        >>> sum(p.numel() for p in build_model().parameters())
        38282
    """
    return DigitsCNN(num_classes=num_classes)
