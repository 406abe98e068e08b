"""``mmengine.runner.base_loop``: ``BaseLoop`` (hookline's).

Example::

    >>> from hookline.compat.mmengine.runner.base_loop import BaseLoop
    >>> from hookline.compat.mmengine.runner.loops import ValLoop
    >>> issubclass(ValLoop, BaseLoop)
    True
"""

from hookline.engine.loops import BaseLoop

__all__ = ["BaseLoop"]
