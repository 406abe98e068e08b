import copy
from typing import Sequence

from hookline.compat.mmengine.hooks import Hook
from hookline.compat.mmengine.model import is_model_wrapper
from hookline.compat.mmengine.runner import Runner
from toyyolo.registry import HOOKS


@HOOKS.register_module()
class YOLOXModeSwitchHook(Hook):
    """For the last ``num_last_epochs`` epochs: a new training pipeline (the dataloader is
    rebuilt from the config) and the head's auxiliary loss."""

    def __init__(self, num_last_epochs: int = 15, new_train_pipeline: Sequence[dict] = None):
        self.num_last_epochs = num_last_epochs
        self.new_train_pipeline_cfg = new_train_pipeline

    def before_train_epoch(self, runner: Runner):
        epoch = runner.epoch
        model = runner.model
        if is_model_wrapper(model):
            model = model.module
        if (epoch + 1) == runner.max_epochs - self.num_last_epochs:
            runner.logger.info(f'New Pipeline: {self.new_train_pipeline_cfg}')
            train_dataloader_cfg = copy.deepcopy(runner.cfg.train_dataloader)
            train_dataloader_cfg.dataset.pipeline = self.new_train_pipeline_cfg
            new_train_dataloader = Runner.build_dataloader(train_dataloader_cfg)
            runner.train_loop.dataloader = new_train_dataloader
            runner.logger.info('recreate the dataloader!')
            model.use_bbox_aux = True
