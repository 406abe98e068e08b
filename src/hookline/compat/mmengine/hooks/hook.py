"""``mmengine.hooks.hook``: ``Hook`` (hookline's, with MMEngine's stages) and ``DATA_BATCH``.

Example::

    >>> from hookline.compat.mmengine.hooks.hook import Hook
    >>> "after_train_iter" in Hook.stages
    True
"""

from hookline.engine.hook import DATA_BATCH, Hook

__all__ = ["DATA_BATCH", "Hook"]
