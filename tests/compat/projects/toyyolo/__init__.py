"""An mmyolo-style project: a ParamSchedulerHook subclass without ``super().__init__()`` and a
mode switch that rebuilds the training dataloader from ``runner.cfg``."""
