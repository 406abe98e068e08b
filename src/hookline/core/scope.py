"""The default scope: the registry scope unscoped names are looked up in first (MMEngine's
``default_scope``), process-wide, as MMEngine's ``DefaultScope`` is.

Example::

    >>> with using_scope("toys"):
    ...     default_scope()
    'toys'
    >>> default_scope() is None
    True
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .errors import ConfigError

__all__ = ["default_scope", "set_default_scope", "using_scope"]

#: the scope unscoped names are looked up in first (MMEngine's ``default_scope``)
_DEFAULT_SCOPE: list[str | None] = [None]


def default_scope() -> str | None:
    """The current default scope (None when unset)."""
    return _DEFAULT_SCOPE[0]


def set_default_scope(scope: str | None) -> str | None:
    """Make unscoped names resolve in the registry of ``scope`` first (in every
    registry tree that has one); returns the previous default scope.

    Example::

        >>> previous = set_default_scope("toys")
        >>> set_default_scope(previous)
        'toys'
    """
    if scope is not None and (not isinstance(scope, str) or not scope):
        raise ConfigError(f"a scope must be a non-empty string or None, got {scope!r}")
    previous, _DEFAULT_SCOPE[0] = _DEFAULT_SCOPE[0], scope
    return previous


@contextlib.contextmanager
def using_scope(scope: str | None) -> Iterator[None]:
    """Temporarily set the default scope (None keeps the current one)."""
    if scope is None:
        yield
        return
    previous = set_default_scope(scope)
    try:
        yield
    finally:
        set_default_scope(previous)
