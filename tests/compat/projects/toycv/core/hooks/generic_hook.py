from hookline.compat.mmcv.runner import HOOKS, Hook, master_only


@HOOKS.register_module()
class ModeCounterHook(Hook):
    """Counts epochs and iterations per mode through mmcv's generic methods."""

    def __init__(self):
        self.epochs = {'train': 0, 'val': 0}
        self.iters = {'train': 0, 'val': 0}
        self.batch_sizes = []

    def before_epoch(self, runner):
        self.epochs[runner.mode] += 1

    def after_iter(self, runner):
        self.iters[runner.mode] += 1
        if self.every_n_inner_iters(runner, 4):
            self.batch_sizes.append(len(runner.data_batch[0]))

    @master_only
    def after_run(self, runner):
        runner.meta['hook_msgs']['mode_counter'] = dict(self.iters)
