"""The errors hookline raises, and the "did you mean" helper they share.

Example::

    >>> from hookline.core import ConfigError
    >>> err = ConfigError.unknown("hook type", "ChekpointHook", ["CheckpointHook", "EMAHook"])
    >>> "did you mean 'CheckpointHook'" in str(err)
    True
"""

from __future__ import annotations

import difflib
import functools
import reprlib
from collections.abc import Iterable
from typing import Any


def closest_names(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Return up to ``n`` of ``choices`` that look most like ``name`` (case-insensitive)."""
    choices = list(choices)
    by_lower: dict[str, str] = {}
    for choice in choices:
        by_lower.setdefault(choice.lower(), choice)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.5)
    found = [by_lower[c] for c in close]
    # A substring match ("ema" in "EMAHook") is a good hint even when
    # difflib's ratio is low.
    for choice in choices:
        if len(found) >= n:
            break
        if name.lower() in choice.lower() and choice not in found:
            found.append(choice)
    return found


class _BriefRepr(reprlib.Repr):
    """``reprlib`` limits (a bounded amount of work on a huge value), dicts in their order."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxtuple, self.maxdict = 3, 6, 6, 8
        self.maxstring, self.maxother = 80, 80

    def repr_dict(self, x: dict[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        items = [f"{self.repr1(k, level - 1)}: {self.repr1(v, level - 1)}"
                 for k, v in list(x.items())[:self.maxdict]]
        return "{" + ", ".join(items) + (", ...}" if len(x) > self.maxdict else "}")


_BRIEF, _BRIEF_CHARS = _BriefRepr(), 160


class ConfigError(ValueError):
    """A configuration, name or argument that hookline cannot accept.

    Raised early (before any work that would be lost), naming what was wrong
    and what is accepted.
    """

    @classmethod
    def unknown(cls, what: str, name: Any, accepted: Iterable[str]) -> ConfigError:
        """An unknown ``name`` of kind ``what``, suggesting the closest of ``accepted``."""
        accepted = sorted(accepted)
        close = closest_names(str(name), accepted)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = ", ".join(accepted) if len(accepted) <= 30 else f"{len(accepted)} names"
        return cls(f"unknown {what} {name!r}{hint} (accepted: {listing})")

    @staticmethod
    def brief(value: Any) -> str:
        """``repr(value)`` cut to a readable length, for saying what was given: a list of
        tensor batches passed where a config was expected is named, not printed whole.

        Example::

            >>> ConfigError.brief({"type": "SGD", "lr": 0.01})
            "{'type': 'SGD', 'lr': 0.01}"
            >>> ConfigError.brief(list(range(1000)))
            'list [0, 1, 2, 3, 4, 5, ...]'
        """
        text = " ".join(_BRIEF.repr(value).split())
        if "..." not in text and len(text) <= _BRIEF_CHARS:
            return text
        cut = text if len(text) <= _BRIEF_CHARS else text[:_BRIEF_CHARS] + " ..."
        return f"{type(value).__name__} {cut}"


def qualified_name(obj: Any) -> str:
    """A readable name for a hook: ``module.Qualname`` for functions, the class for objects;
    what a ``functools.partial`` or a handle (a decorator's result) stands for, by its name."""
    for _ in range(8):  # partial(partial(f)), a handle of a partial ...
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif type(obj).__name__ == "HookHandle" and getattr(obj, "hook", None) is not None:
            obj = obj.hook
        else:
            break
    target = getattr(obj, "__func__", obj)
    qualname = getattr(target, "__qualname__", None)
    module: str | None
    if qualname is None:
        qualname = type(target).__qualname__
        module = type(target).__module__
    else:
        module = getattr(target, "__module__", None)
    return f"{module}.{qualname}" if module and module != "builtins" else qualname


class HookError(RuntimeError):
    """A hook raised. The message names the hook and the hook point; the
    original exception is ``__cause__``.

    Attributes:
        hook: the callable that raised (a ``when=`` predicate, when that raised).
        point: the name of the hook point (an event name, ``f.pre`` ...).
        filtering: when ``hook`` is a ``when=`` predicate, the hook it decides for (else None).
    """

    def __init__(self, hook: Any, point: str, original: BaseException, *,
                 filtering: Any = None) -> None:
        self.hook = hook
        self.point = point
        self.original = original
        self.filtering = filtering
        what = (f"hook {qualified_name(hook)}" if filtering is None else
                f"when-predicate {qualified_name(hook)} of hook {qualified_name(filtering)}")
        super().__init__(f"{what} failed at {point}: {type(original).__name__}: {original}")

    def __reduce__(self) -> tuple[Any, ...]:
        # picklable across processes
        if self.filtering is None:
            return (type(self), (self.hook, self.point, self.original))
        return (_predicate_error, (type(self), self.hook, self.point, self.original, self.filtering))


def _predicate_error(cls: type[HookError], hook: Any, point: str, original: BaseException,
                     filtering: Any) -> HookError:
    """Unpickles a :class:`HookError` raised by a ``when=`` predicate."""
    return cls(hook, point, original, filtering=filtering)
