"""Models of other frameworks: what a Runner sets up around a model it was given.

A model written for another framework may expect that framework around it
while it trains (a ``LightningModule`` calls ``self.log`` and reads
``self.trainer``). The adapters of
:data:`~hookline.engine.registries.MODEL_ADAPTERS` provide it: when a Runner
is built, after its loops and before it reads the model's
``configure_optimizers()``, every adapter whose ``matches(model)`` is true
gets ``attach(runner)``. It may register hooks (they run like any other), and
returns a context manager the Runner holds open while it calls
``configure_optimizers()``.

The engine imports no adapter: ``MODEL_ADAPTERS`` names the module that
registers them (``hookline.integrations``), imported the first time a Runner
is built. With it unavailable nothing matches, and models train as before.

Example::

    >>> import torch
    >>> from types import SimpleNamespace
    >>> from hookline.engine.registries import MODEL_ADAPTERS
    >>> sorted(MODEL_ADAPTERS)                 # hookline.integrations registers this one
    ['lightning_module']
    >>> with adapt_model(SimpleNamespace(model=torch.nn.Linear(2, 1))) as held:
    ...     pass                               # a plain module: no adapter matches
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from .registries import MODEL_ADAPTERS

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner

__all__ = ["ModelAdapter", "adapt_model"]


class ModelAdapter(Protocol):
    """What ``MODEL_ADAPTERS`` holds: which models an adapter takes, and what it sets up."""

    #: a short name for messages (``"lightning_module"``)
    name: str

    def matches(self, model: object) -> bool:
        """Whether ``model`` is one this adapter serves (cheap: no framework import)."""
        ...

    def attach(self, runner: Runner) -> AbstractContextManager[Any]:
        """Set up ``runner.model`` for the run (register hooks ...); the context returned is
        held open while the Runner calls the model's ``configure_optimizers()``."""
        ...


def adapt_model(runner: Any) -> contextlib.ExitStack:
    """Attach every adapter that matches ``runner.model``; returns the contexts to hold open
    while ``configure_optimizers()`` runs (one ``ExitStack``: use it in a ``with``)."""
    stack = contextlib.ExitStack()
    for _name, adapter in MODEL_ADAPTERS.items():
        if adapter.matches(runner.model):
            stack.enter_context(adapter.attach(runner))
    return stack
