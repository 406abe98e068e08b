import warnings
from typing import Dict, Optional

from hookline.compat.mmengine.hooks import EMAHook as BaseEMAHook
from hookline.compat.mmengine.logging import MMLogger
from hookline.compat.mmengine.runner import Runner
from toypretrain.registry import HOOKS


@HOOKS.register_module()
class EMAHook(BaseEMAHook):
    """MMEngine's EMAHook that can also evaluate the original (non-averaged) weights.

    With ``evaluate_on_origin`` the validation is run a second time on the
    original weights and its metrics are logged as ``val/<name>_origin``.
    """

    priority = 'NORMAL'

    def __init__(self, ema_type: str = 'ExponentialMovingAverage', strict_load: bool = False,
                 begin_iter: int = 0, begin_epoch: int = 0, evaluate_on_ema: bool = True,
                 evaluate_on_origin: bool = False, **kwargs):
        super().__init__(ema_type=ema_type, strict_load=strict_load, begin_iter=begin_iter,
                         begin_epoch=begin_epoch, **kwargs)
        if not evaluate_on_ema and not evaluate_on_origin:
            warnings.warn('evaluate_on_ema is off: evaluating on the original model',
                          UserWarning)
            evaluate_on_origin = True
        self.evaluate_on_ema = evaluate_on_ema
        self.evaluate_on_origin = evaluate_on_origin

    def before_val_epoch(self, runner) -> None:
        if self.evaluate_on_ema:
            self._swap_ema_parameters()

    def after_val_epoch(self, runner, metrics: Optional[Dict[str, float]] = None) -> None:
        if self.evaluate_on_ema:
            self._swap_ema_parameters()
        if self.evaluate_on_ema and self.evaluate_on_origin:
            val_loop = runner.val_loop
            runner.model.eval()
            for idx, data_batch in enumerate(val_loop.dataloader):
                val_loop.run_iter(idx, data_batch)
            origin_metrics = val_loop.evaluator.evaluate(len(val_loop.dataloader.dataset))
            for k, v in origin_metrics.items():
                runner.message_hub.update_scalar(f'val/{k}_origin', v)

    def before_test_epoch(self, runner) -> None:
        if self.evaluate_on_ema:
            self._swap_ema_parameters()
            MMLogger.get_current_instance().info('Start testing on EMA model.')

    def after_test_epoch(self, runner: Runner,
                         metrics: Optional[Dict[str, float]] = None) -> None:
        if self.evaluate_on_ema:
            self._swap_ema_parameters()
