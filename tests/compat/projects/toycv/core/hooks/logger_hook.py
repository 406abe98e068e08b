from hookline.compat.mmcv.runner import HOOKS, LoggerHook, master_only


@HOOKS.register_module()
class ListLoggerHook(LoggerHook):
    """An mmcv logger backend that keeps what it would send: (mode, iter, tags)."""

    def __init__(self, interval=10, ignore_last=True, reset_flag=False, by_epoch=True):
        super().__init__(interval, ignore_last, reset_flag, by_epoch)
        self.sent = []

    @master_only
    def log(self, runner):
        tags = self.get_loggable_tags(runner)
        self.sent.append((self.get_mode(runner), self.get_iter(runner), self.get_epoch(runner),
                          tags))
