"""What a checkpoint may hold: tensors and plain containers, so ``weights_only`` loads it.

:func:`make_meta` builds the ``meta`` entry every hookline checkpoint carries,
:func:`to_plain` converts numpy values to tensors and plain numbers, and
:func:`check_weights_only` names the first entry ``torch.load(weights_only=True)``
would refuse, before anything is written.

Example::

    >>> import torch
    >>> from hookline.engine.checkpoint import check_weights_only, make_meta
    >>> check_weights_only({"meta": make_meta(epoch=1, iteration=10), "w": torch.ones(2)})
"""

from __future__ import annotations

import collections
import io
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from hookline.core.version import __version__ as _HOOKLINE_VERSION


def make_meta(epoch: int, iteration: int, **extra: Any) -> dict[str, Any]:
    """The ``"meta"`` entry of a hookline checkpoint.

    Holds ``hookline_version`` (what marks a file as a hookline checkpoint),
    ``torch_version``, ``epoch``, ``iter`` (what :func:`find_resumable` orders
    by), ``time`` (seconds since the epoch) and any ``extra`` entries, which
    must be plain values.

    Example::

        >>> meta = make_meta(epoch=2, iteration=90, seed=0)
        >>> meta["iter"], meta["seed"], "hookline_version" in meta
        (90, 0, True)
    """
    return {
        "hookline_version": _HOOKLINE_VERSION,
        "torch_version": str(torch.__version__),
        "epoch": int(epoch),
        "iter": int(iteration),
        "time": time.time(),
        **extra,
    }


def to_plain(obj: Any) -> Any:
    """A copy of ``obj`` that ``torch.load(weights_only=True)`` accepts.

    Numpy arrays become tensors (``torch.from_numpy`` of a copy; the dtype is
    kept), numpy scalars become Python scalars, and dicts, lists, tuples and
    sets are converted recursively (a dict subclass other than ``OrderedDict``
    and ``Counter``, or a named tuple, becomes a plain ``dict`` / ``tuple``).
    Tensors and everything else are returned as they are; use
    :func:`check_weights_only` to find values that would still be refused.

    Example::

        >>> import numpy as np
        >>> to_plain({"state": ("MT19937", np.arange(3, dtype=np.uint32), np.int64(2))})
        {'state': ('MT19937', tensor([0, 1, 2], dtype=torch.uint32), 2)}
    """
    if isinstance(obj, torch.Tensor):
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            raise TypeError("to_plain: a numpy array of dtype=object cannot become a tensor")
        return torch.from_numpy(np.ascontiguousarray(obj).copy())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Mapping):
        items = [(to_plain(k), to_plain(v)) for k, v in obj.items()]
        if type(obj) is collections.OrderedDict:
            return collections.OrderedDict(items)
        if type(obj) is collections.Counter:
            return collections.Counter(dict(items))
        return dict(items)
    if isinstance(obj, list):
        return [to_plain(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(to_plain(v) for v in obj)
    if isinstance(obj, (set, frozenset)):
        return {to_plain(v) for v in obj}
    return obj


# Exact types that weights_only loading accepts (torch 2.4 .. 2.13), besides tensors.
_PLAIN_LEAVES: tuple[type, ...] = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    bytearray,
    torch.Size,
    torch.device,
    torch.dtype,
    torch.layout,
    torch.memory_format,
    torch.qscheme,
)
_PLAIN_MAPPINGS: tuple[type, ...] = (dict, collections.OrderedDict, collections.Counter)
_PLAIN_SEQUENCES: tuple[type, ...] = (list, tuple, set)
_PLAIN_TENSORS: tuple[type, ...] = (torch.Tensor, torch.nn.Parameter)


def _user_safe_types() -> set[Any]:
    """Classes the user allowlisted with ``torch.serialization.add_safe_globals``."""
    get = getattr(torch.serialization, "get_safe_globals", None)
    if get is None:
        return set()
    out: set[Any] = set()
    for entry in get():
        out.add(entry[0] if isinstance(entry, tuple) else entry)
    return out


def check_weights_only(obj: Any, name: str = "checkpoint") -> None:
    """Raise :class:`TypeError` if ``obj`` holds a value that
    ``torch.load(weights_only=True)`` would refuse.

    The message gives the value's place (``checkpoint['hooks'][0]['best']``)
    and type, so the problem shows when saving instead of when resuming.
    Accepted: tensors, ``None``, bool, int, float, complex, str, bytes,
    ``torch.Size``/``device``/``dtype``, dicts (``dict``, ``OrderedDict``,
    ``Counter``), lists, tuples, sets, and classes allowlisted with
    ``torch.serialization.add_safe_globals``.

    Example::

        >>> import numpy as np
        >>> check_weights_only({"w": torch.ones(1), "n": [1, 2.0, None]})
        >>> try:
        ...     check_weights_only({"hooks": [{"best": np.float64(0.5)}]})
        ... except TypeError as exc:
        ...     print(exc)  # doctest: +ELLIPSIS
        checkpoint['hooks'][0]['best'] is a numpy.float64, which torch.load(weights_only=True) refuses; ...
    """
    allowed_extra = _user_safe_types()
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [(name, obj)]
    while stack:
        where, value = stack.pop()
        kind = type(value)
        if kind in _PLAIN_LEAVES or kind in allowed_extra:
            continue
        if isinstance(value, torch.Tensor):
            if kind in _PLAIN_TENSORS:
                continue
        elif kind in _PLAIN_MAPPINGS or kind in _PLAIN_SEQUENCES:
            if id(value) in seen:
                continue
            seen.add(id(value))
            if kind in _PLAIN_MAPPINGS:
                for key, item in reversed(list(value.items())):
                    stack.append((f"{where}[{key!r}]", item))
                    stack.append((f"{where} key {key!r}", key))
            elif kind is set:
                stack.extend((f"{where} item", item) for item in value)
            else:
                stack.extend((f"{where}[{i}]", item) for i, item in reversed(list(enumerate(value))))
            continue
        qualname = (
            f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__name__
        )
        raise TypeError(
            f"{where} is a {qualname}, which torch.load(weights_only=True) refuses; store tensors and "
            "plain containers only (hookline.engine.checkpoint.to_plain converts numpy values), or "
            "allowlist the class with torch.serialization.add_safe_globals"
        )


def serialize(checkpoint: dict[str, Any], *, check: bool = True) -> bytes:
    """``torch.save`` ``checkpoint`` into bytes, after (with ``check``) making sure it loads
    with ``weights_only`` (:func:`check_weights_only` raises naming the entry that would not).

    Example::

        >>> len(serialize({"w": torch.ones(2)})) > 0
        True
    """
    if check:
        check_weights_only(checkpoint)
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    return buffer.getvalue()
