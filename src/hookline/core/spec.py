"""Argument specs: an event that names its arguments, as a pluggy hookspec does.

``Event("process", args=("data", "config"))`` says which keyword arguments
its emissions carry. An emission's positional
arguments are matched to the spec's names in order, and its keywords must be
names of the spec: anything else (an unknown keyword, more positional
arguments than names, a name given twice) is one :class:`ConfigError` at the
emission, whichever hooks are registered (:func:`check_emission`).

Each hook then gets what it asks for: its parameters named in the spec, by
name (positional-only ones positionally), in any order, and a ``**kwargs``
parameter gets every other argument of the emission by name. A hook that
names an argument the spec does not have (without a default), or takes only
``*args``, is a :class:`ConfigError` when it is registered, not a
``TypeError`` at the first emission. A hook whose parameters are the spec's
names in the spec's order is called as it is, at no cost.

Example::

    >>> from hookline.core import Event
    >>> process = Event("process", args=("data", "config"))
    >>> _ = process.register(lambda data: data * 2)
    >>> _ = process.register(lambda config, data: config["x"] + data)
    >>> process.emit(data=3, config={"x": 10})
    [6, 13]
    >>> process.emit(3, {"x": 1}), process.emit(data=3, confg={})
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: event 'process' got the keyword 'confg', ...; did you mean 'config'? ...
    >>> process.register(lambda date: 0)
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: hook <lambda> of event 'process' names 'date', ...
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
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


def check_emission(spec: tuple[str, ...], event: str, args: tuple[Any, ...],
                   kwargs: Mapping[str, Any]) -> None:
    """One :class:`ConfigError` unless ``args`` and ``kwargs`` fit the spec: no more positional
    arguments than names, keywords among the names not given positionally."""
    if len(args) > len(spec):
        raise ConfigError(f"event {event!r} takes {len(spec)} argument(s) "
                          f"({', '.join(spec) or 'none'}), got {len(args)} positional ones")
    for key in kwargs:
        if key not in spec:
            close = closest_names(key, spec, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"event {event!r} got the keyword {key!r}, which is not one of its "
                              f"arguments{hint} (its arguments: {', '.join(spec) or 'none'})")
        if spec.index(key) < len(args):
            raise ConfigError(f"event {event!r} got {key!r} twice: as positional argument "
                              f"{spec.index(key) + 1} and as a keyword")


def checking(emit: Callable[..., Any], spec: tuple[str, ...], event: str) -> Callable[..., Any]:
    """``emit`` behind :func:`check_emission` (only events with a spec pay for it)."""
    limit = len(spec)

    def checked(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) > limit:
            check_emission(spec, event, args, kwargs)
        return emit(*args, **kwargs)
    return checked


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__qualname__


def _refuse_unknown(fn: Callable[..., Any], params: list[inspect.Parameter], spec: tuple[str, ...],
                    event: str, role: str) -> None:
    """A :class:`ConfigError` for a required parameter the spec does not pass, or a hook that
    could only take the arguments through ``*args``."""
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    unknown = [p.name for p in params
               if p.kind not in kinds and p.name not in spec and p.default is p.empty]
    if unknown:
        close = closest_names(unknown[0], spec, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{role} {_name(fn)} of event {event!r} names "
                          f"{', '.join(map(repr, unknown))}, which the event does not pass"
                          f"{hint} (its arguments: {', '.join(spec) or 'none'})")
    takes = {p.kind for p in params}
    if (inspect.Parameter.VAR_POSITIONAL in takes and inspect.Parameter.VAR_KEYWORD not in takes
            and spec and not any(p.name in spec for p in params)):
        short, names = _name(fn).rsplit(".", 1)[-1], ", ".join(spec)
        example = f"def {short}({names})" if short.isidentifier() else f"lambda {names}: ..."
        raise ConfigError(f"{role} {_name(fn)} of event {event!r} takes only *args, but the event "
                          f"passes its arguments by name ({names}): name them, as in {example}, "
                          "or take **kwargs")


def _as_is(params: list[inspect.Parameter], spec: tuple[str, ...]) -> bool:
    """Whether a hook can take every emission as it is: its first parameters are the spec's
    names in order (positional or keyword), and the rest are optional."""
    head = params[:len(spec)]
    if tuple(p.name for p in head) != spec or any(
            p.kind is not p.POSITIONAL_OR_KEYWORD for p in head):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in params[len(spec):])


def fit_to_spec(fn: Callable[..., Any], spec: tuple[str, ...], event: str,
                role: str = "hook") -> Callable[..., Any]:
    """``fn``, or a wrapper calling it with the spec's arguments it asks for (see the module
    docstring); emissions reach it already checked by :func:`check_emission`."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature to read: called with what is emitted
        return fn
    _refuse_unknown(fn, params, spec, event, role)
    if _as_is(params, spec):
        return fn
    # (name, default): positional-only parameters, filled in order while the emission has them
    positional = [(p.name, p.default) for p in params if p.kind is p.POSITIONAL_ONLY]
    named = tuple(p.name for p in params
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name in spec)
    rest = tuple(name for name in spec if name not in named and name not in dict(positional)) \
        if any(p.kind is p.VAR_KEYWORD for p in params) else ()

    def call(*args: Any, **kwargs: Any) -> Any:
        if args:
            kwargs = {**dict(zip(spec, args)), **kwargs}
        given = []
        for name, default in positional:
            if name in kwargs:
                given.append(kwargs[name])
            elif default is not inspect.Parameter.empty:
                given.append(default)
            else:
                break  # missing: the call says which, as a plain call would
        chosen = {k: kwargs[k] for k in named if k in kwargs}
        chosen.update((k, kwargs[k]) for k in rest if k in kwargs)
        return fn(*given, **chosen)

    setattr(call, "__hookline_fn__", fn)  # errors and reports name the user's hook
    return call
