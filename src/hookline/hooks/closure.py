"""``ClosureHook`` lives in the engine (``Runner.on`` builds one); this name stays for imports.

Example::

    >>> from hookline.hooks.closure import ClosureHook
    >>> ClosureHook("after_run", print).triggered_stages()
    ['after_run']
"""

from hookline.engine.closure_hook import ClosureHook

__all__ = ["ClosureHook"]
