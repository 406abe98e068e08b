"""``hookline.compat.mmengine``: the module paths MMEngine hooks import, over hookline.

``mmengine.X`` becomes ``hookline.compat.mmengine.X``: ``registry``,
``hooks``, ``dist``, ``model``, ``logging``, ``utils``, ``runner``,
``optim``, ``device``, ``visualization`` and ``config``. As in MMEngine, the
package itself re-exports ``utils``, ``registry``, ``logging`` and
``config`` names (``mmengine.mkdir_or_exist``, ``mmengine.dist.get_dist_info()``).

Example::

    >>> import hookline.compat.mmengine as mmengine
    >>> mmengine.dist.get_dist_info(), mmengine.is_list_of([1], int)
    ((0, 1), True)
"""

from hookline.core.dependencies import raise_missing as _raise_missing

try:  # first: without PyTorch, one error saying what to install
    import torch as _torch  # noqa: F401
except ModuleNotFoundError as _exc:
    _raise_missing(_exc, "hookline.compat.mmengine")

from . import (
    config,
    device,
    dist,
    hooks,
    logging,
    model,
    optim,
    registry,
    runner,
    utils,
    version,
    visualization,
)
from .config import Config, ConfigDict
from .logging import HistoryBuffer, MessageHub, MMLogger, print_log
from .registry import (
    DATASETS,
    HOOKS,
    LOOPS,
    METRICS,
    MODEL_WRAPPERS,
    MODELS,
    OPTIM_WRAPPERS,
    OPTIMIZERS,
    PARAM_SCHEDULERS,
    RUNNERS,
    VISUALIZERS,
    DefaultScope,
    Registry,
    build_from_cfg,
    init_default_scope,
)
from .utils import (
    ProgressBar,
    digit_version,
    is_list_of,
    is_method_overridden,
    is_seq_of,
    is_str,
    is_tuple_of,
    mkdir_or_exist,
    scandir,
)
from .version import __version__

__all__ = [
    "DATASETS", "HOOKS", "LOOPS", "METRICS", "MODELS", "MODEL_WRAPPERS", "OPTIMIZERS",
    "OPTIM_WRAPPERS", "PARAM_SCHEDULERS", "RUNNERS", "VISUALIZERS", "Config", "ConfigDict",
    "__version__",
    "DefaultScope", "HistoryBuffer", "MMLogger", "MessageHub", "ProgressBar", "Registry",
    "build_from_cfg", "config", "device", "digit_version", "dist", "hooks", "init_default_scope",
    "is_list_of", "is_method_overridden", "is_seq_of", "is_str", "is_tuple_of", "logging",
    "mkdir_or_exist", "model", "optim", "print_log", "registry", "runner", "scandir", "utils",
    "version", "visualization",
]
