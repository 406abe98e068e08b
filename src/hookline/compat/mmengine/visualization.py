"""``mmengine.visualization``: ``Visualizer`` and its local and TensorBoard backends.

``runner.visualizer`` is a :class:`Visualizer`; ``Visualizer.get_current_instance()``
is the one of the Runner made or run last.

Example::

    >>> from hookline.compat.mmengine.visualization import Visualizer
    >>> Visualizer(vis_backends=[]).add_scalars({"loss": 0.1}, step=1)   # no backend: nothing written
"""

from __future__ import annotations

from hookline.engine.visualizer import LocalVisBackend, TensorboardVisBackend, Visualizer

__all__ = ["LocalVisBackend", "TensorboardVisBackend", "Visualizer"]
