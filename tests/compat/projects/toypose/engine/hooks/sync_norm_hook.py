from collections import OrderedDict

from torch import nn

from hookline.compat.mmengine.dist import all_reduce_dict, get_dist_info
from hookline.compat.mmengine.hooks import Hook
from toypose.registry import HOOKS


def get_norm_states(module: nn.Module) -> OrderedDict:
    """The state of every norm layer of ``module``, by full name."""
    async_norm_states = OrderedDict()
    for name, child in module.named_modules():
        if isinstance(child, nn.modules.batchnorm._NormBase):
            for k, v in child.state_dict().items():
                async_norm_states['.'.join([name, k])] = v
    return async_norm_states


@HOOKS.register_module()
class SyncNormHook(Hook):
    """Averages the norm layers' statistics over the ranks before validation."""

    def before_val_epoch(self, runner):
        module = runner.model
        rank, world_size = get_dist_info()
        if world_size == 1:
            return
        norm_states = get_norm_states(module)
        if len(norm_states) == 0:
            return
        norm_states = {k: v.float() for k, v in norm_states.items()}
        all_reduce_dict(norm_states, op='mean')
        module.load_state_dict(norm_states, strict=False)
