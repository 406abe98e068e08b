from hookline.compat.mmengine.hooks import Hook
from hookline.compat.mmengine.model.wrappers import is_model_wrapper
from toydet.registry import HOOKS


@HOOKS.register_module()
class SetEpochInfoHook(Hook):
    """Tells the model which epoch starts."""

    def before_train_epoch(self, runner):
        epoch = runner.epoch
        model = runner.model
        if is_model_wrapper(model):
            model = model.module
        model.set_epoch(epoch)
