"""Other frameworks' callbacks as Runner hooks: the adapters ``Runner.register_hook`` wraps them in.

A Runner takes hookline :class:`~hookline.engine.hook.Hook` instances and hook
configs. Anything else given to ``hooks=[...]`` or ``register_hook`` (a
``keras.callbacks.Callback``, a ``lightning.pytorch.Callback``) is offered to
the adapters of :data:`~hookline.engine.registries.HOOK_ADAPTERS`: the first
whose ``matches(obj)`` is true wraps it (``wrap(obj, runner)``) in a Hook, and
that Hook is registered. An adapter refuses what it cannot map with one
:class:`~hookline.core.ConfigError` there, at registration.

The engine imports no adapter: ``HOOK_ADAPTERS`` names the module that
registers them (``hookline.integrations``), imported the first time an object
that is not a Hook is registered, the way ``HOOKS`` finds ``hookline.hooks``.
With that module unavailable nothing matches, and ``HookTable.add`` refuses
the object as before.

Example::

    >>> from hookline.engine.hook_adapters import find_adapter
    >>> from hookline.engine import Hook
    >>> find_adapter(Hook()) is None        # hooks need no adapter
    True
    >>> class Keraslike:                     # any object with Keras' callback methods
    ...     def on_epoch_end(self, epoch, logs=None):
    ...         pass
    >>> find_adapter(Keraslike()).name
    'keras'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .hook import Hook
from .registries import HOOK_ADAPTERS

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner

__all__ = ["HookAdapter", "adapt_hook", "find_adapter"]


class HookAdapter(Protocol):
    """What ``HOOK_ADAPTERS`` holds: which objects an adapter takes, and the Hook it makes."""

    #: a short name for messages (``"keras"``, ``"lightning"``)
    name: str

    def matches(self, obj: object) -> bool:
        """Whether ``obj`` is a callback this adapter wraps (cheap: no framework import)."""
        ...

    def wrap(self, obj: Any, runner: Runner) -> Hook:
        """The Hook that runs ``obj`` in ``runner``; a ``ConfigError`` for what cannot be mapped."""
        ...


def find_adapter(obj: object) -> HookAdapter | None:
    """The adapter that wraps ``obj``, or None (for hooks, configs and unknown objects)."""
    if isinstance(obj, (Hook, Mapping, str, type)):
        return None
    for _name, adapter in HOOK_ADAPTERS.items():
        if adapter.matches(obj):
            found: HookAdapter = adapter
            return found
    return None


def adapt_hook(obj: Any, runner: Runner) -> Any:
    """``obj`` wrapped by its adapter, or ``obj`` itself when no adapter takes it."""
    adapter = find_adapter(obj)
    return obj if adapter is None else adapter.wrap(obj, runner)
