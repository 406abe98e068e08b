"""``mmengine.runner.loops``: the loops (hookline's), for ``isinstance`` checks and for
subclassing (``runner.train_loop`` is one of them).

Example::

    >>> from hookline.compat.mmengine.runner.loops import EpochBasedTrainLoop, ValLoop
    >>> import hookline.engine.loops as loops
    >>> EpochBasedTrainLoop is loops.EpochBasedTrainLoop, ValLoop is loops.ValLoop
    (True, True)
"""

from hookline.engine.loops import EpochBasedTrainLoop, IterBasedTrainLoop, TestLoop, ValLoop

__all__ = ["EpochBasedTrainLoop", "IterBasedTrainLoop", "TestLoop", "ValLoop"]
