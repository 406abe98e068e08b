# The first custom hook the seeds teach (mmcv 1.x): runner-only signature, register_module(),
# every_n_iters, runner.outputs / inner_iter / data_loader.
from hookline.compat.mmcv.runner import HOOKS, Hook


@HOOKS.register_module()
class LossPrinterHook(Hook):

    def __init__(self, interval=2):
        self.interval = interval
        self.records = []
        self.last_iters = []

    def after_train_iter(self, runner):
        if self.every_n_iters(runner, self.interval):
            self.records.append((runner.iter + 1, runner.inner_iter,
                                 runner.outputs['log_vars']['loss']))
        if self.end_of_epoch(runner):
            self.last_iters.append((runner.epoch, runner.inner_iter, len(runner.data_loader)))
        if self.is_last_iter(runner):
            runner.logger.info('last iteration %d of %d', runner.iter + 1, runner._max_iters)
