from hookline.compat.mmengine.registry import DATASETS as MMENGINE_DATASETS
from hookline.compat.mmengine.registry import HOOKS as MMENGINE_HOOKS
from hookline.compat.mmengine.registry import Registry

HOOKS = Registry('hook', parent=MMENGINE_HOOKS, locations=['toyyolo.engine.hooks'])
DATASETS = Registry('dataset', parent=MMENGINE_DATASETS, locations=['toyyolo.datasets'])
