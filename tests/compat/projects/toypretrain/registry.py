from hookline.compat.mmengine.registry import HOOKS as MMENGINE_HOOKS
from hookline.compat.mmengine.registry import MODELS as MMENGINE_MODELS
from hookline.compat.mmengine.registry import Registry

HOOKS = Registry('hook', parent=MMENGINE_HOOKS, locations=['toypretrain.engine.hooks'])
MODELS = Registry('model', parent=MMENGINE_MODELS, locations=['toypretrain.models'])
