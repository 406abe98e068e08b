"""Argument specs: an event that names its arguments, as a pluggy hookspec does.

``Event("process", args=("data", "config"))`` says which keyword arguments
its emissions carry. Each hook then names the ones it wants, in any order,
and gets only those; naming one that is not in the spec is a
:class:`ConfigError` when the hook is registered, not a ``TypeError`` at the
first emission. A hook that names every argument in the spec's order (or
takes ``**kwargs``) is called as it is, at no cost.

Example::

    >>> from hookline.core import Event
    >>> process = Event("process", args=("data", "config"))
    >>> _ = process.register(lambda data: data * 2)
    >>> _ = process.register(lambda config, data: config["x"] + data)
    >>> process.emit(data=3, config={"x": 10})
    [6, 13]
    >>> process.register(lambda date: 0)
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: hook <lambda> of event 'process' names 'date', ...
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .errors import ConfigError, closest_names


def check_spec(args: Any, event: str) -> tuple[str, ...]:
    """``args`` as a tuple of distinct argument names, or one :class:`ConfigError`."""
    if isinstance(args, str) or not isinstance(args, Sequence) or not all(
            isinstance(a, str) and a.isidentifier() for a in args):
        raise ConfigError(f"the args of event {event!r} must be a list of argument names, e.g. "
                          f"('data', 'config'); got {args!r}")
    if len(set(args)) != len(args):
        raise ConfigError(f"the args of event {event!r} name an argument twice: {args!r}")
    return tuple(args)


def fit_to_spec(fn: Callable[..., Any], spec: tuple[str, ...], event: str,
                role: str = "hook") -> Callable[..., Any]:
    """``fn``, or a wrapper calling it with only the spec's arguments it names (positional
    arguments of an emission are matched to the spec's names in order)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature to read: called with what is emitted
        return fn
    if any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL, p.POSITIONAL_ONLY) for p in params):
        return fn
    unknown = [p.name for p in params if p.name not in spec and p.default is p.empty]
    if unknown:
        name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
        close = closest_names(unknown[0], spec, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{role} {name} of event {event!r} names "
                          f"{', '.join(map(repr, unknown))}, which the event does not pass"
                          f"{hint} (its arguments: {', '.join(spec) or 'none'})")
    names = tuple(p.name for p in params if p.name in spec)
    if names == spec[:len(names)] and len(names) == len(spec):
        return fn

    def call(*args: Any, **kwargs: Any) -> Any:
        if args:
            kwargs = {**dict(zip(spec, args)), **kwargs}
        return fn(**{k: kwargs[k] for k in names if k in kwargs})

    setattr(call, "__hookline_fn__", fn)  # errors and reports name the user's hook
    return call
