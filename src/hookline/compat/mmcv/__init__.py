"""``hookline.compat.mmcv``: mmcv 1.x's runner-side module paths over hookline.

``mmcv.runner``, ``mmcv.parallel`` and ``mmcv.utils`` become
``hookline.compat.mmcv.runner`` / ``.parallel`` / ``.utils``. As in mmcv,
the package re-exports the ``utils`` names (``mmcv.mkdir_or_exist``,
``mmcv.is_list_of``, ``mmcv.ProgressBar``, ``mmcv.Config``). mmcv's ops,
image and video modules are not part of it.

Example::

    >>> import hookline.compat.mmcv as mmcv
    >>> mmcv.is_tuple_of((1, 2), int), mmcv.runner.get_dist_info()
    (True, (0, 1))
"""

from hookline.core.dependencies import raise_missing as _raise_missing

try:  # first: without PyTorch, one error saying what to install
    import torch as _torch  # noqa: F401
except ModuleNotFoundError as _exc:
    _raise_missing(_exc, "hookline.compat.mmcv")

from . import parallel, runner, utils
from .utils import (
    Config,
    ConfigDict,
    ProgressBar,
    Registry,
    build_from_cfg,
    digit_version,
    get_logger,
    is_list_of,
    is_method_overridden,
    is_seq_of,
    is_str,
    is_tuple_of,
    mkdir_or_exist,
    print_log,
    scandir,
    track_iter_progress,
)

__version__ = "1.7.2"

__all__ = [
    "Config", "ConfigDict", "ProgressBar", "Registry", "build_from_cfg", "digit_version",
    "get_logger", "is_list_of", "is_method_overridden", "is_seq_of", "is_str", "is_tuple_of",
    "mkdir_or_exist", "parallel", "print_log", "runner", "scandir", "track_iter_progress", "utils",
]
