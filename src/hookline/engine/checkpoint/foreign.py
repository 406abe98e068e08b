"""Reading the weights of a checkpoint another library wrote, without running its code.

MMEngine's training checkpoints hold, besides their ``state_dict``, objects of
MMEngine's own classes (the message hub's ``HistoryBuffer``, a ``ConfigDict``
in ``meta``), which ``torch.load(weights_only=True)`` refuses.
:func:`load_skipping_foreign` reads such a file with ``torch.load`` and a
restricted unpickler (:func:`restricted_pickle_module`): a global of the
allowlist (what tensors, torch's containers and numpy arrays need; the same
list ``weights_only`` loading uses, plus numpy's) is the real one; every other
global becomes a :class:`ForeignObject` class that records its name and keeps
the arguments and state the pickle gives it. No module named in the file is
imported and no function outside the allowlist is called, so no code of the
file runs. The caller keeps the tensors and ignores the rest.

Example::

    >>> import datetime, tempfile, torch
    >>> path = f"{tempfile.mkdtemp()}/foreign.pth"
    >>> torch.save({"state_dict": {"w": torch.ones(2)},
    ...             "meta": {"day": datetime.date(2024, 1, 2)}}, path)
    >>> loaded = load_skipping_foreign(path)
    >>> loaded.checkpoint["state_dict"]["w"].tolist(), loaded.checkpoint["meta"]["day"]
    ([1.0, 1.0], <skipped datetime.date>)
    >>> loaded.skipped, loaded.summary()
    ({'datetime.date': ('meta',)}, 'datetime.date (meta)')
"""

from __future__ import annotations

import _compat_pickle
import codecs
import functools
import importlib
import pickle
import types
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, ClassVar

import torch

from .errors import PathLike

#: modules never taken from a pickle, whatever an allowlist says (as in torch's own loader)
_BLOCKED_MODULES = frozenset({"sys", "os", "posix", "nt"})

#: torch's functions that rebuild tensors, as ``torch.load(weights_only=True)`` allows them
_REBUILD_FUNCTIONS = (
    "_rebuild_parameter", "_rebuild_parameter_with_state", "_rebuild_qtensor", "_rebuild_tensor",
    "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_sparse_tensor",
    "_rebuild_meta_tensor_no_storage", "_rebuild_nested_tensor", "_rebuild_wrapper_subclass",
    "_rebuild_device_tensor_from_numpy", "_rebuild_device_tensor_from_cpu_tensor",
)

#: plain Python values a checkpoint may hold (a dtype given as ``float``, a ``set``, ...)
_BUILTINS: tuple[type, ...] = (set, frozenset, complex, bytearray, bytes, slice, range, int, float,
                               bool, str, tuple, list, dict)


class ForeignObject:
    """Stands in for an object of a class (or a call of a function) that was not loaded.

    Each foreign global of a pickle becomes a subclass whose ``foreign_name``
    is the global's full name (``mmengine.logging.history_buffer.HistoryBuffer``);
    its instances keep what the pickle gave them, as data, and do nothing
    else: ``args`` and ``kwargs`` (of the call), ``state`` (BUILD),
    ``entries`` (items set as in a dict) and ``elements`` (appended as to a
    list).

    Example::

        >>> cls = placeholder_class("mmengine.config.config.ConfigDict")
        >>> obj = cls()
        >>> obj["lr"] = 0.1
        >>> obj, obj.entries, issubclass(cls, ForeignObject)
        (<skipped mmengine.config.config.ConfigDict>, {'lr': 0.1}, True)
    """

    foreign_name: ClassVar[str] = "?"
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    state: Any
    entries: dict[Any, Any]
    elements: list[Any]

    def __new__(cls, *args: Any, **kwargs: Any) -> ForeignObject:
        obj = super().__new__(cls)
        obj.args, obj.kwargs = args, kwargs
        obj.state = None
        obj.entries = {}
        obj.elements = []
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass  # what the pickle gave is kept by __new__; nothing runs

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __setitem__(self, key: Any, value: Any) -> None:
        self.entries[key] = value

    def append(self, value: Any) -> None:
        self.elements.append(value)

    def extend(self, values: Any) -> None:
        self.elements.extend(values)

    def __repr__(self) -> str:
        return f"<skipped {self.foreign_name}>"


def placeholder_class(name: str) -> type[ForeignObject]:
    """A new :class:`ForeignObject` subclass standing in for the global ``name``."""
    short = name.rsplit(".", 1)[-1] or "Foreign"
    return type(short, (ForeignObject,), {"foreign_name": name, "__module__": __name__,
                                          "__qualname__": f"ForeignObject[{name}]"})


def _numpy_globals() -> dict[str, Any]:
    """numpy's arrays, dtypes and scalars, under the names numpy 1 and 2 pickle them with
    (taken from numpy itself, never imported by a name read from a file)."""
    try:
        import numpy as np  # noqa: PLC0415 - optional: torch runs without numpy
    except ImportError:  # pragma: no cover
        return {}
    reconstruct: Any = np.ndarray(0).__reduce__()[0]  # numpy's own, wherever numpy keeps it
    scalar: Any = np.float64(0).__reduce__()[0]

    def safe_reconstruct(subtype: Any, shape: Any, dtype: Any) -> Any:
        if isinstance(subtype, type) and issubclass(subtype, ForeignObject):
            return subtype()  # an ndarray subclass of another library: skipped too
        if subtype is not np.ndarray:
            raise pickle.UnpicklingError(f"numpy array of type {subtype!r} refused")
        return reconstruct(subtype, shape, dtype)

    found: dict[str, Any] = {"numpy.ndarray": np.ndarray, "numpy.dtype": np.dtype}
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        found[f"{module}._reconstruct"] = safe_reconstruct
        found[f"{module}.scalar"] = scalar
    for code in np.typecodes["All"]:
        dtype_class = type(np.dtype(code))
        found[f"numpy.dtypes.{dtype_class.__name__}"] = dtype_class
    return found


def _torch_globals() -> dict[str, Any]:
    """What ``torch.load(weights_only=True)`` allows, spelled out from torch's public
    names (and its own list too where this torch has it)."""
    found: dict[str, Any] = {
        "collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
        "torch.Size": torch.Size, "torch.device": torch.device, "torch.Tensor": torch.Tensor,
        "torch.nn.parameter.Parameter": torch.nn.Parameter, "_codecs.encode": codecs.encode,
        "torch.storage.UntypedStorage": torch.UntypedStorage,
        "torch.storage.TypedStorage": torch.TypedStorage,
    }
    for value in vars(torch).values():
        if isinstance(value, (torch.dtype, torch.qscheme)):
            found[str(value)] = value
    rebuild = importlib.import_module("torch._utils")
    for name in _REBUILD_FUNCTIONS:
        if hasattr(rebuild, name):
            found[f"torch._utils.{name}"] = getattr(rebuild, name)
    for name, module in (("_rebuild_from_type_v2", "torch._tensor"),
                         ("_get_layout", "torch.serialization")):
        function = getattr(importlib.import_module(module), name, None)
        if function is not None:
            found[f"{module}.{name}"] = function
    # torch's own list, where this torch version has it under this (private) name
    own = getattr(importlib.import_module("torch._weights_only_unpickler"), "_get_allowed_globals",
                  None)
    if callable(own):
        try:
            found.update({k: v for k, v in own().items() if isinstance(k, str)})
        except Exception:  # pragma: no cover - another torch version: the list above stands
            pass
    return found


@functools.lru_cache(maxsize=1)
def _static_globals() -> dict[str, Any]:
    found = {f"builtins.{t.__name__}": t for t in _BUILTINS}
    found.update(_torch_globals())
    found.update(_numpy_globals())
    return found


def allowed_globals() -> dict[str, Any]:
    """Full name -> object, for every global the restricted unpickler takes as it is:
    torch's tensor machinery, plain containers and numbers, numpy arrays, and what
    ``torch.serialization.add_safe_globals`` allowed."""
    found = dict(_static_globals())
    for entry in torch.serialization.get_safe_globals():
        if isinstance(entry, tuple):
            found[entry[1]] = entry[0]
        else:
            found[f"{entry.__module__}.{entry.__qualname__}"] = entry
    return {name: value for name, value in found.items()
            if name.split(".", 1)[0] not in _BLOCKED_MODULES}


def _buildable(allowed: dict[str, Any]) -> tuple[type, ...]:
    """Classes whose instances a pickle's BUILD may give state to (never a class itself)."""
    classes: list[type] = [ForeignObject, torch.Tensor, OrderedDict, Counter]
    classes += [v for k, v in allowed.items()
                if isinstance(v, type) and (k.startswith("numpy.") or v.__module__.startswith("numpy"))]
    classes += [v for v in (e[0] if isinstance(e, tuple) else e
                            for e in torch.serialization.get_safe_globals()) if isinstance(v, type)]
    return tuple(classes)


def restricted_pickle_module(found: set[str] | None = None) -> types.ModuleType:
    """A ``pickle_module`` for ``torch.load(..., weights_only=False)`` that loads tensors,
    containers and numpy arrays and turns every other global into a :class:`ForeignObject`.

    The full name of each global it replaced is added to ``found``. Its
    ``Unpickler`` is Python's own pure-Python unpickler (``pickle._Unpickler``)
    with ``find_class`` answered from :func:`allowed_globals` (never by
    importing), and BUILD refused for anything but an instance of a tensor, an
    ``OrderedDict``, a numpy array or dtype, or a placeholder (so a pickle
    cannot set attributes of a class or function).

    Example::

        >>> import io, pickle
        >>> names = set()
        >>> module = restricted_pickle_module(names)
        >>> payload = pickle.dumps({"x": [1, 2], "when": __import__("datetime").date(2024, 1, 2)})
        >>> module.load(io.BytesIO(payload)), sorted(names)
        ({'x': [1, 2], 'when': <skipped datetime.date>}, ['datetime.date'])
    """
    record = found if found is not None else set()
    allowed = allowed_globals()
    buildable = _buildable(allowed)
    placeholders: dict[str, type[ForeignObject]] = {}

    class Unpickler(pickle._Unpickler):  # noqa: SLF001 - the pure-Python unpickler, to guard BUILD
        dispatch = dict(pickle._Unpickler.dispatch)  # noqa: SLF001

        def find_class(self, module: str, name: str) -> Any:
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
            full = f"{module}.{name}"
            if full in allowed:
                return allowed[full]
            record.add(full)
            if full not in placeholders:
                placeholders[full] = placeholder_class(full)
            return placeholders[full]

        def load_build(self) -> None:
            inst = self.stack[-2]  # type: ignore[attr-defined]
            if not isinstance(inst, buildable):
                raise pickle.UnpicklingError(
                    f"refused to set the state of {inst!r} (a {type(inst).__name__})")
            super().load_build()  # type: ignore[misc]

        dispatch[pickle.BUILD[0]] = load_build  # type: ignore[assignment]

    def load(file: IO[bytes], **kwargs: Any) -> Any:
        return Unpickler(file, **kwargs).load()

    module = types.ModuleType("hookline_restricted_pickle", restricted_pickle_module.__doc__)
    module.Unpickler = Unpickler  # type: ignore[attr-defined]
    module.load = load  # type: ignore[attr-defined]
    return module


def _inside(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        yield from value.keys()
        yield from value.values()
    elif isinstance(value, (list, tuple, set, frozenset)):
        yield from value
    elif isinstance(value, ForeignObject):
        yield from (value.args, value.kwargs, value.state, value.entries, value.elements)
    elif getattr(getattr(value, "dtype", None), "kind", None) == "O" and hasattr(value, "flat"):
        # a numpy array of objects
        yield from value.flat


def locate_foreign(obj: Any) -> dict[str, tuple[str, ...]]:
    """Each placeholder's global name -> the top-level keys of ``obj`` (a dict) it is under.

    Example::

        >>> cls = placeholder_class("mmengine.logging.history_buffer.HistoryBuffer")
        >>> locate_foreign({"state_dict": {}, "message_hub": {"log_scalars": {"loss": cls()}}})
        {'mmengine.logging.history_buffer.HistoryBuffer': ('message_hub',)}
    """
    where: dict[str, list[str]] = {}
    tops = obj.items() if isinstance(obj, dict) else [("", obj)]
    for key, top in tops:
        seen: set[int] = set()
        todo = [top]
        while todo:
            value = todo.pop()
            if id(value) in seen or isinstance(value, (torch.Tensor, str, bytes, int, float)):
                continue
            seen.add(id(value))
            if isinstance(value, ForeignObject) or (isinstance(value, type)
                                                    and issubclass(value, ForeignObject)):
                keys = where.setdefault(value.foreign_name, [])
                if str(key) not in keys:
                    keys.append(str(key))
            todo.extend(_inside(value))
    return {name: tuple(keys) for name, keys in where.items()}


@dataclass(frozen=True)
class ForeignLoad:
    """What :func:`load_skipping_foreign` read.

    Attributes:
        checkpoint: the unpickled object, :class:`ForeignObject` where a foreign object was.
        skipped: each foreign global's full name -> the top-level keys it was found under
            (empty when it left no trace in the result).
    """

    checkpoint: Any
    skipped: dict[str, tuple[str, ...]]

    def library(self) -> str | None:
        """``"MMEngine"`` or ``"mmcv"`` when the skipped objects are that library's, else None."""
        return library_of(self.skipped)

    def summary(self) -> str:
        """The skipped globals with where they were: ``A (message_hub), B (meta, hooks)``."""
        return ", ".join(f"{name} ({', '.join(keys)})" if keys else name
                         for name, keys in sorted(self.skipped.items()))


def library_of(names: Iterable[str]) -> str | None:
    """``"MMEngine"`` or ``"mmcv"`` when one of the global ``names`` is that library's.

    Example::

        >>> library_of(["numpy.dtype", "mmengine.logging.history_buffer.HistoryBuffer"])
        'MMEngine'
    """
    roots = {name.split(".", 1)[0] for name in names}
    for root, library in (("mmengine", "MMEngine"), ("mmcv", "mmcv")):
        if root in roots:
            return library
    return None


def refused_globals(path: PathLike, first: str) -> list[str]:
    """The globals of ``path`` that ``weights_only`` loading refuses (``first``, the one
    its error named, included), those of other libraries than numpy first; found by
    reading the pickle's opcodes (``torch.serialization.get_unsafe_globals_in_checkpoint``,
    zip-format files), never by running it; just ``[first]`` where that cannot tell."""
    scan = getattr(torch.serialization, "get_unsafe_globals_in_checkpoint", None)
    try:
        names = set(scan(path)) if scan is not None else set()
    except Exception:  # an old-format file, an opcode the scan does not know, ...
        names = set()
    names.add(first if "." in first else f"builtins.{first}")  # torch names builtins bare
    return sorted(names, key=lambda name: (name.startswith("numpy"), name))


def load_skipping_foreign(path: PathLike, map_location: Any = "cpu", *,
                          mmap: bool = False) -> ForeignLoad:
    """``torch.load`` ``path`` with :func:`restricted_pickle_module`: its tensors, containers
    and numpy arrays as they are, every foreign object a :class:`ForeignObject`.

    Exceptions of ``torch.load`` (a corrupt file, a pickle the placeholders
    cannot stand in for) propagate unchanged.
    """
    found: set[str] = set()
    module = restricted_pickle_module(found)
    checkpoint = torch.load(path, map_location=map_location, weights_only=False,
                            pickle_module=module, mmap=mmap)
    skipped: dict[str, tuple[str, ...]] = dict.fromkeys(sorted(found), ())
    skipped.update(locate_foreign(checkpoint))
    return ForeignLoad(checkpoint, skipped)


__all__ = ["ForeignLoad", "ForeignObject", "allowed_globals", "library_of",
           "load_skipping_foreign", "locate_foreign", "placeholder_class", "refused_globals",
           "restricted_pickle_module"]
