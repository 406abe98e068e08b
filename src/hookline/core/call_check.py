"""Whether a call's keyword arguments fit its target: the check a registry's ``build`` (and
any config-driven call) runs before calling, so a misspelt argument is one ``ConfigError``.

Example::

    >>> def square(side=1.0): ...
    >>> try:
    ...     check_call(square, {"sied": 2}, "Square")
    ... except ConfigError as err:
    ...     print(err)
    Square got unexpected argument(s) 'sied' (did you mean 'side'?); it accepts: side
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ConfigError, closest_names

__all__ = ["accepted_keywords", "check_call"]


def accepted_keywords(target: Callable[..., Any]) -> set[str] | None:
    """The keyword arguments ``target`` accepts, or None when it takes ``**kwargs``
    (or has no readable signature)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    names = set()
    for param in signature.parameters.values():
        if param.kind is param.VAR_KEYWORD:
            return None
        if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            names.add(param.name)
    return names


def check_call(target: Callable[..., Any], kwargs: Mapping[str, Any], what: str) -> None:
    """Raise :class:`ConfigError` unless ``target(**kwargs)`` matches its signature."""
    accepted = accepted_keywords(target)
    if accepted is not None:
        unknown = sorted(set(kwargs) - accepted)
        if unknown:
            hints = []
            for key in unknown:
                close = closest_names(key, accepted, n=1)
                hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise ConfigError(
                f"{what} got unexpected argument(s) {', '.join(hints)}; "
                f"it accepts: {', '.join(sorted(accepted)) or 'no keyword arguments'}"
            )
    try:
        inspect.signature(target).bind(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{what}: {exc}") from None
    except ValueError:  # no signature: nothing to check
        pass
