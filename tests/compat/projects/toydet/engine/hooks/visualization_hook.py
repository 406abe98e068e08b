import os.path as osp
from typing import Sequence

import torch

from hookline.compat.mmengine.hooks import Hook
from hookline.compat.mmengine.runner import Runner
from hookline.compat.mmengine.visualization import Visualizer
from toydet.registry import HOOKS


@HOOKS.register_module()
class DetVisualizationHook(Hook):
    """Draws one validation sample every ``interval`` batches through the visualizer."""

    def __init__(self, draw: bool = False, interval: int = 1) -> None:
        self._visualizer: Visualizer = Visualizer.get_current_instance()
        self.interval = interval
        self.draw = draw
        self._test_index = 0

    def after_val_iter(self, runner: Runner, batch_idx: int, data_batch: dict,
                       outputs: Sequence[dict]) -> None:
        if not self.draw:
            return
        total_curr_iter = runner.iter + batch_idx
        data_sample = outputs[0]
        image = (data_sample['image'].clamp(0, 1) * 255).to(torch.uint8)
        if total_curr_iter % self.interval == 0:
            self._visualizer.add_datasample(
                osp.basename(data_sample['img_path']) if 'img_path' in data_sample else 'val_img',
                image, data_sample=data_sample, draw_gt=False, show=False,
                step=total_curr_iter)
