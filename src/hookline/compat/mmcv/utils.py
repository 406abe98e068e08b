"""``mmcv.utils``: mmcv 1.x's ``Registry``, type checks, logging and progress helpers.

mmcv's ``Registry(name, build_func=None, parent=None, scope=None)`` is
MMEngine's here (scope inferred from the creating package), plus mmcv 1.x's
deprecated bare decorator ``@REG.register_module`` (no parentheses).

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
import warnings
from typing import Any

from ..mmengine.config import Config, ConfigDict
from ..mmengine.logging import print_log
from ..mmengine.registry import Registry as _MMEngineRegistry
from ..mmengine.registry import build_from_cfg
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


class Registry(_MMEngineRegistry):
    """mmcv 1.x's ``Registry``: MMEngine's, and mmcv's old bare decorator.

    mmcv 1.x still accepts ``@HOOKS.register_module`` without parentheses
    (registering the class under its own name, with a ``DeprecationWarning``);
    MMEngine refuses it. Ported mmcv code keeps working::

        >>> import warnings
        >>> LAYERS = Registry("layer", scope="toycv_old")
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     @LAYERS.register_module
        ...     class Old:
        ...         pass
        >>> type(LAYERS.build(dict(type="Old"))).__name__
        'Old'
    """

    def register_module(self, name: Any = None, force: bool = False, module: Any = None) -> Any:
        if isinstance(name, type):
            warnings.warn(f"@{self.name}.register_module without parentheses is mmcv 1.x's "
                          f"deprecated form; write @register_module()", DeprecationWarning,
                          stacklevel=2)
            return super().register_module(force=force, module=name)
        return super().register_module(name, force=force, module=module)


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
