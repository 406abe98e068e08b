# A hook written like MMEngine's own hook modules; ported by the import rule only
# (``mmengine.registry`` -> ``hookline.compat.mmengine.registry`` ...).
import time
from typing import Optional, Sequence, Union

from hookline.compat.mmengine.hooks.hook import DATA_BATCH, Hook
from hookline.compat.mmengine.registry import HOOKS

DATA_BATCH_OR_NONE = Optional[Union[dict, tuple, list]]


@HOOKS.register_module()
class IterTimerHook(Hook):
    """Times every iteration of every mode and keeps an ETA in the message hub.

    ``IterTimerHook`` is also the name of a hookline built-in: registering it
    here must neither fail nor replace the built-in for other users.
    """

    priority = 'NORMAL'

    def __init__(self):
        self.time_sec_tot = 0.0
        self.start_iter = 0

    def before_train(self, runner) -> None:
        self.start_iter = runner.iter

    def _before_epoch(self, runner, mode: str = 'train') -> None:
        self.t = time.time()

    def _before_iter(self, runner, batch_idx: int, data_batch: DATA_BATCH = None,
                     mode: str = 'train') -> None:
        runner.message_hub.update_scalar(f'{mode}/data_time', time.time() - self.t)

    def _after_iter(self, runner, batch_idx: int, data_batch: DATA_BATCH = None,
                    outputs: Optional[Union[dict, Sequence]] = None,
                    mode: str = 'train') -> None:
        iter_time = time.time() - self.t
        runner.message_hub.update_scalar(f'{mode}/time', iter_time)
        self.t = time.time()
        if mode == 'train':
            self.time_sec_tot += iter_time
            iter_passed = runner.iter - self.start_iter + 1
            time_sec_avg = self.time_sec_tot / iter_passed
            eta_sec = time_sec_avg * (runner.max_iters - runner.iter - 1)
            runner.message_hub.update_info('eta', eta_sec)
