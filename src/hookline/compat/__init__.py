"""hookline.compat: MMEngine's and mmcv 1.x's module paths over hookline's own objects.

A hook file written for OpenMMLab ports by one rule: every ``from mmengine.X
import ...`` becomes ``from hookline.compat.mmengine.X import ...`` and every
``from mmcv.X import ...`` (``mmcv.runner``, ``mmcv.parallel``,
``mmcv.utils``) becomes ``from hookline.compat.mmcv.X import ...``; nothing
else changes. The names here are thin layers over hookline's Runner, hooks,
registries and message hub (no second engine); docs/porting.md lists what is
supported and every difference that remains.

This package sits above ``hookline.engine`` and ``hookline.hooks``; nothing
below it imports it.

Example::

    >>> from hookline.compat.mmengine.hooks import Hook
    >>> from hookline.compat.mmengine.registry import HOOKS
    >>> @HOOKS.register_module()
    ... class NoteEpochs(Hook):
    ...     def after_train_epoch(self, runner):
    ...         runner.message_hub.update_info("last_epoch", runner.epoch)
    >>> HOOKS.get("NoteEpochs").__name__
    'NoteEpochs'
"""
