"""torchinfo's ``summary`` options in :func:`hookline.inspect.summary`: checked, mapped, or refused.

``col_names`` and ``row_settings`` take torchinfo's names (plus hookline's
own ``trainable_params`` and ``flops`` columns); ``verbose`` is 0, 1 or 2.
``col_width`` and ``cache_forward_pass`` have no counterpart and are refused.
Other keyword arguments go to ``model.forward`` only when its signature has
them (or takes ``**kwargs``); anything else is a ConfigError naming it,
where torchinfo would hand it to ``forward`` and fail there.

Example::

    >>> from torch import nn
    >>> from hookline.inspect._options import check_columns, forward_kwargs
    >>> check_columns(["output_size", "num_params"], forward=True)
    ('output_size', 'num_params')
    >>> forward_kwargs(nn.Linear(2, 2), {"col_width": 20})
    Traceback (most recent call last):
    ...
    hookline.core.errors.ConfigError: summary does not take torchinfo's col_width: ...
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Iterable
from typing import Any

from torch import nn

from hookline.core import ConfigError
from hookline.core.errors import closest_names

#: column name -> header; torchinfo's names first, then hookline's own
COLUMNS: dict[str, str] = {
    "input_size": "Input Shape",
    "output_size": "Output Shape",
    "num_params": "Param #",
    "params_percent": "Param %",
    "kernel_size": "Kernel Shape",
    "mult_adds": "Mult-Adds",
    "trainable": "Trainable",
    "trainable_params": "Trainable #",
    "flops": "FLOPs",
}
DEFAULT_COLUMNS = ("output_size", "num_params", "trainable_params", "flops")
NEED_FORWARD = frozenset({"input_size", "output_size", "mult_adds", "flops"})
ROW_SETTINGS = ("depth", "var_names", "ascii_only", "hide_recursive_layers")
VERBOSITY = (0, 1, 2)
#: torchinfo options hookline's summary has no counterpart for, and why
REFUSED = {
    "col_width": "columns are as wide as their widest cell",
    "cache_forward_pass": "every call runs its own forward pass (a ModelSummary re-renders without one: "
                          "set its columns and call table())",
}
#: the keyword options summary() itself takes
OPTIONS = ("input_size", "input_data", "depth", "batch_dim", "col_names", "dtypes", "device", "mode",
           "row_settings", "verbose", "count_flops")


def check_columns(col_names: Iterable[str] | None, forward: bool) -> tuple[str, ...]:
    """The columns to show, in the given order; unknown names are a ConfigError listing the accepted ones."""
    if col_names is None:
        return DEFAULT_COLUMNS if forward else tuple(c for c in DEFAULT_COLUMNS
                                                     if c not in NEED_FORWARD)
    columns = _names(col_names, "col_names", "column names", COLUMNS)
    for name in columns:
        if name in NEED_FORWARD and not forward:
            raise ConfigError(f"col_names entry {name!r} needs a forward pass: give input_size or input_data "
                              f"(without one: {', '.join(c for c in COLUMNS if c not in NEED_FORWARD)})")
    if not columns:
        raise ConfigError(f"col_names is empty; accepted names: {', '.join(COLUMNS)}")
    return columns


def check_rows(row_settings: Iterable[str] | None) -> tuple[str, ...] | None:
    """The row settings (None: hookline's default label, ``name (Type)``)."""
    if row_settings is None:
        return None
    return _names(row_settings, "row_settings", "names", ROW_SETTINGS)


def _names(value: Any, option: str, what: str, accepted: Collection[str]) -> tuple[str, ...]:
    """``value`` as a tuple of names from ``accepted``; anything else is a ConfigError."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigError(f"{option} must be a list of {what} ({', '.join(accepted)}), "
                          f"got {value!r}")
    names = tuple(value)
    for name in names:
        if name not in accepted:
            raise ConfigError.unknown(f"{option} entry", name, accepted)
    return names


def check_verbose(verbose: Any) -> int | None:
    if verbose is not None and (isinstance(verbose, bool) or verbose not in VERBOSITY):
        raise ConfigError(f"verbose must be 0 (quiet), 1 (print the table) or 2 (print it with each layer's "
                          f"parameters), or None (return without printing); got {verbose!r}")
    return verbose if verbose is None else int(verbose)


def forward_kwargs(model: nn.Module, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments meant for ``model.forward``; anything else is a ConfigError naming it."""
    for name in kwargs:
        if name in REFUSED:
            raise ConfigError(f"summary does not take torchinfo's {name}: {REFUSED[name]}; "
                              f"its options: {', '.join(OPTIONS)}")
    if not kwargs:
        return {}
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):  # no readable signature (some TorchScript models): forward decides
        return dict(kwargs)
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return dict(kwargs)
    accepted = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for name in kwargs:
        if name not in accepted:
            close = closest_names(name, [*OPTIONS, *accepted])
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ConfigError(f"summary got {name!r}, which is neither one of its options nor an argument of "
                              f"{type(model).__name__}.forward{hint} (options: {', '.join(OPTIONS)}; "
                              f"forward arguments: {', '.join(accepted) or 'none'})")
    return dict(kwargs)
