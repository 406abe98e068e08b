"""One clear error for a package that a part of hookline needs and that is not installed.

``pip install hookline`` installs torch and the training layer's other
dependencies; ``pip install --no-deps hookline`` gives ``hookline.core``
alone (pure Python). The torch-backed layers check their dependency first, so
that importing one without it says what to install::

    >>> error = missing_dependency(ModuleNotFoundError("No module named 'torch'", name="torch"),
    ...                            "hookline.engine")
    >>> str(error).split(": ")[0]
    'hookline.engine needs PyTorch, which is not installed'
    >>> isinstance(error, ImportError), error.name
    (True, 'torch')

Standard library only, like the rest of ``hookline.core``: the CLI and every layer import it
without torch.
"""

from __future__ import annotations

from typing import NoReturn

__all__ = ["INSTALL", "MissingDependencyError", "missing_dependency", "raise_missing"]

#: a top-level module hookline may need -> (what it is called, how to install it)
INSTALL: dict[str, tuple[str, str]] = {
    "torch": ("PyTorch", 'pip install "torch>=2.4" (hookline.core works without it)'),
    "numpy": ("NumPy", 'pip install "numpy>=1.24"'),
    "yaml": ("PyYAML", 'pip install "PyYAML>=6.0"'),
    "tqdm": ("tqdm", 'pip install "tqdm>=4.60"'),
    "matplotlib": ("matplotlib", 'pip install "matplotlib>=3.7"'),
    "tensorboard": ("TensorBoard", 'pip install "tensorboard>=2.14"'),
    "keras": ("Keras", 'pip install "hookline[keras]"'),
    "lightning": ("Lightning", 'pip install "hookline[lightning]"'),
}


class MissingDependencyError(ModuleNotFoundError):
    """A package a part of hookline needs is not installed. A ``ModuleNotFoundError`` (an
    ``ImportError``) whose ``name`` is the missing module and whose message says what to install;
    the original error is its ``__cause__``."""


def missing_dependency(exc: ModuleNotFoundError, needed_by: str) -> MissingDependencyError | None:
    """The clear error for ``exc`` when it says that one of :data:`INSTALL`'s modules is missing
    (``needed_by`` names what needs it); None for any other missing module."""
    name = exc.name or ""
    if name not in INSTALL:  # a submodule of an installed package, or a module of no dependency
        return None
    what, install = INSTALL[name]
    return MissingDependencyError(f"{needed_by} needs {what}, which is not installed: {install}",
                                  name=name)


def raise_missing(exc: ModuleNotFoundError, needed_by: str) -> NoReturn:
    """Raise :func:`missing_dependency`'s error chained to ``exc``, or ``exc`` itself when it is
    about no known dependency. Called in an ``except ModuleNotFoundError`` block."""
    error = missing_dependency(exc, needed_by)
    if error is None:
        raise exc
    raise error from exc
