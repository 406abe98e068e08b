"""What the assembly layer adds to a bare engine: the built-in registrations.

``register_builtins()`` imports ``hookline.hooks`` (every built-in hook in
``HOOKS``) and the demo's model and dataset (``DigitsCNN``,
``DigitsDataset``), so configs can name them. The default hook set itself
is :data:`hookline.engine.default_hooks.DEFAULT_HOOKS` (registry names only).

Example::

    >>> from hookline.app.defaults import register_builtins
    >>> from hookline.engine import HOOKS, MODELS
    >>> register_builtins()
    >>> "EMAHook" in HOOKS, "DigitsCNN" in MODELS
    (True, True)
"""

from __future__ import annotations

import hookline.demo.registry
import hookline.hooks
from hookline.engine.default_hooks import LEGACY_DEFAULT_HOOKS

__all__ = ["LEGACY_DEFAULT_HOOKS", "register_builtins"]


def register_builtins() -> None:
    """Make sure the built-in hooks and the demo's model and dataset are registered.

    Importing this module already did it; the call documents the intent where
    a config is about to be checked.
    """
    for module in (hookline.hooks, hookline.demo.registry):
        assert module.__name__  # imported above
