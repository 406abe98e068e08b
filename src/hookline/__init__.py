"""hookline: hooks for Python and PyTorch.

``import hookline.core`` gives the generic, pure-Python hook machinery.
The training layer (``Runner``, ``Hook``, ``HOOKS``) and the inspection
tools import torch, so they load lazily on first attribute access::

    >>> import hookline.core          # no torch imported
    >>> from hookline.core import Event

Without torch (``pip install --no-deps hookline``) the core names work, a
torch-backed name (``hookline.Runner``) raises one ``ImportError`` saying what
to install, and ``from hookline import *`` imports the core names only
(``__all__`` lists the torch-backed names only where torch is installed).
"""

import importlib as _importlib
import importlib.util as _importlib_util
import typing as _typing

from hookline.core.registry import SCOPE_MODULES as _SCOPE_MODULES
from hookline.core.version import __version__

# ``{"type": "mmengine.LinearLR"}`` anywhere (a Runner argument, a config) loads the port
_SCOPE_MODULES.update({"mmengine": "hookline.compat.mmengine", "mmcv": "hookline.compat.mmcv"})

if _typing.TYPE_CHECKING:  # what the lazy names are, for type checkers (loaded by __getattr__)
    from hookline.core import ConfigError as ConfigError
    from hookline.core import Event as Event
    from hookline.core import EventBus as EventBus
    from hookline.core import HandleGroup as HandleGroup
    from hookline.core import HookError as HookError
    from hookline.core import HookHandle as HookHandle
    from hookline.core import Priority as Priority
    from hookline.core import Registry as Registry
    from hookline.core import Skip as Skip
    from hookline.core import hookable as hookable
    from hookline.core import observe as observe
    from hookline.core import observed as observed
    from hookline.engine import DATASETS as DATASETS
    from hookline.engine import HOOKS as HOOKS
    from hookline.engine import LOOPS as LOOPS
    from hookline.engine import METRICS as METRICS
    from hookline.engine import MODELS as MODELS
    from hookline.engine import AmpOptimWrapper as AmpOptimWrapper
    from hookline.engine import CheckpointError as CheckpointError
    from hookline.engine import Hook as Hook
    from hookline.engine import MessageHub as MessageHub
    from hookline.engine import OptimWrapper as OptimWrapper
    from hookline.engine import OptimWrapperDict as OptimWrapperDict
    from hookline.engine import Runner as Runner
    from hookline.engine import TrainingInterrupted as TrainingInterrupted

#: the pure-Python names (hookline.core)
_CORE_NAMES = ("Priority", "HookHandle", "HandleGroup", "Event", "EventBus", "hookable", "Skip",
               "observed", "observe", "Registry", "HookError", "ConfigError")
#: the names that need torch (hookline.engine)
_ENGINE_NAMES = ("Hook", "Runner", "HOOKS", "MODELS", "METRICS", "DATASETS", "CheckpointError",
                 "TrainingInterrupted", "MessageHub", "OptimWrapper", "AmpOptimWrapper",
                 "OptimWrapperDict", "LOOPS")

# name -> module that defines it; loaded on first access (PEP 562) so that
# ``import hookline.core`` never pulls in torch.
_LAZY = {**dict.fromkeys(_CORE_NAMES, "hookline.core"), **dict.fromkeys(_ENGINE_NAMES, "hookline.engine")}


def _torch_installed() -> bool:
    """Whether torch can be found (without importing it)."""
    try:
        return _importlib_util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


__all__ = ["__version__", *_CORE_NAMES]
if _torch_installed():  # ``from hookline import *`` works without torch too
    __all__ += _ENGINE_NAMES


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hookline' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
