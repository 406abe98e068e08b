"""``mmcv.utils``: mmcv 1.x's ``Registry``, type checks, logging and progress helpers.

mmcv's ``Registry(name, build_func=None, parent=None, scope=None)`` is the
same class as MMEngine's here (scope inferred from the creating package).

Example::

    >>> from hookline.compat.mmcv.utils import Registry, is_list_of
    >>> BACKBONES = Registry("backbone", scope="toycv")
    >>> @BACKBONES.register_module()
    ... class Tiny:
    ...     def __init__(self, depth=1):
    ...         self.depth = depth
    >>> BACKBONES.build(dict(type="Tiny", depth=3)).depth, is_list_of([Tiny], type)
    (3, True)
"""

from __future__ import annotations

import logging
from typing import Any

from ..mmengine.config import Config, ConfigDict
from ..mmengine.logging import print_log
from ..mmengine.registry import Registry, build_from_cfg
from ..mmengine.utils import (
    TORCH_VERSION,
    ProgressBar,
    check_file_exist,
    digit_version,
    is_filepath,
    is_list_of,
    is_method_overridden,
    is_seq_of,
    is_str,
    is_tuple_of,
    mkdir_or_exist,
    scandir,
    track_iter_progress,
)


def get_logger(name: str, log_file: str | None = None, log_level: int = logging.INFO,
               file_mode: str = "w") -> logging.Logger:
    """The ``logging`` logger ``name`` at ``log_level``, also writing ``log_file`` if given."""
    logger = logging.getLogger(name)
    logger.setLevel(log_level)
    if log_file is not None and not any(
            isinstance(h, logging.FileHandler) and h.baseFilename.endswith(log_file)
            for h in logger.handlers):
        handler = logging.FileHandler(log_file, file_mode, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - "
                                               "%(message)s"))
        logger.addHandler(handler)
    return logger


def is_jit_tracing() -> bool:
    import torch  # noqa: PLC0415  (only asked about when tracing)

    tracing: Any = torch.jit.is_tracing
    return bool(tracing())


def deprecated_api_warning(name_dict: dict[str, str], cls_name: str | None = None) -> Any:
    """mmcv's decorator mapping old keyword names to new ones (with a warning)."""
    import functools  # noqa: PLC0415
    import warnings  # noqa: PLC0415

    def decorator(func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in name_dict.items():
                if old in kwargs:
                    warnings.warn(f"'{old}' is deprecated in {cls_name or func.__name__}; use "
                                  f"'{new}'", DeprecationWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)
        return wrapper
    return decorator


__all__ = [
    "TORCH_VERSION", "Config", "ConfigDict", "ProgressBar", "Registry", "build_from_cfg",
    "check_file_exist", "deprecated_api_warning", "digit_version", "get_logger", "is_filepath",
    "is_jit_tracing", "is_list_of", "is_method_overridden", "is_seq_of", "is_str", "is_tuple_of",
    "mkdir_or_exist", "print_log", "scandir", "track_iter_progress",
]
