# mmdet/registry.py, ported: ``mmengine.registry`` -> ``hookline.compat.mmengine.registry``.
from hookline.compat.mmengine.registry import DATASETS as MMENGINE_DATASETS
from hookline.compat.mmengine.registry import HOOKS as MMENGINE_HOOKS
from hookline.compat.mmengine.registry import METRICS as MMENGINE_METRICS
from hookline.compat.mmengine.registry import MODELS as MMENGINE_MODELS
from hookline.compat.mmengine.registry import Registry

# the scope ("toydet") is inferred from this package, as MMEngine infers "mmdet"
HOOKS = Registry('hook', parent=MMENGINE_HOOKS, locations=['toydet.engine.hooks'])
MODELS = Registry('model', parent=MMENGINE_MODELS, locations=['toydet.models'])
DATASETS = Registry('dataset', parent=MMENGINE_DATASETS)
METRICS = Registry('metric', parent=MMENGINE_METRICS)
