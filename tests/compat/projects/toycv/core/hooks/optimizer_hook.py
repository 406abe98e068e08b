from hookline.compat.mmcv.runner import HOOKS, OptimizerHook


@HOOKS.register_module()
class ManualOptimizerHook(OptimizerHook):
    """mmcv 1.x's way: the hook runs backward, clipping and the optimizer step itself."""

    def after_train_iter(self, runner):
        runner.optimizer.zero_grad()
        runner.outputs['loss'].backward()
        if self.grad_clip is not None:
            grad_norm = self.clip_grads(runner.model.parameters())
            if grad_norm is not None:
                runner.log_buffer.update({'grad_norm': float(grad_norm)},
                                         runner.outputs['num_samples'])
        runner.optimizer.step()
