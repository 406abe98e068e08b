"""Collate functions a dataloader config names: ``collate_fn={"type": "default_collate"}``.

MMEngine's configs give the collate function by name (``collate_fn=dict(type=
"pseudo_collate")``, ``dict(type="default_collate")``); the ``COLLATE_FUNCTIONS``
registry holds torch's ``default_collate`` (stacks samples into batch tensors)
and :func:`pseudo_collate` (MMEngine's: the same nesting, each leaf a list of
the samples' values, nothing stacked: for samples of different sizes and for
data samples a model's ``data_preprocessor`` batches itself). A config's other
keys are bound as keyword arguments (MMEngine builds a ``functools.partial``).

Example::

    >>> batch = pseudo_collate([{"img": 1, "meta": ("a", 2)}, {"img": 3, "meta": ("b", 4)}])
    >>> batch
    {'img': [1, 3], 'meta': [['a', 'b'], [2, 4]]}
    >>> resolve_collate_fn({"type": "pseudo_collate"}, "train_dataloader") is pseudo_collate
    True
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from torch.utils.data import default_collate

from hookline.core import ConfigError

from .registries import COLLATE_FUNCTIONS

__all__ = ["pseudo_collate", "resolve_collate_fn"]


def pseudo_collate(samples: Sequence[Any]) -> Any:
    """The samples' values gathered leaf by leaf into lists, in the first sample's structure
    (dicts and named tuples keep their type, other sequences become lists); strings, bytes
    and anything else are the list of the samples' values."""
    first = samples[0]
    if isinstance(first, (str, bytes)):
        return list(samples)
    if isinstance(first, Mapping):
        gathered = {key: pseudo_collate([s[key] for s in samples]) for key in first}
        kind: Any = type(first)
        return kind(gathered)
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a named tuple
        return type(first)(*(pseudo_collate(column) for column in zip(*samples)))
    if isinstance(first, Sequence):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("pseudo_collate: the samples are sequences of different lengths")
        return [pseudo_collate(column) for column in zip(*samples)]
    return list(samples)


COLLATE_FUNCTIONS.register(default_collate, name="default_collate")
COLLATE_FUNCTIONS.register(pseudo_collate, name="pseudo_collate")


def resolve_collate_fn(spec: Any, where: str) -> Callable[..., Any] | None:
    """A dataloader's ``collate_fn``: a function as it is, a ``{"type": name, **kwargs}``
    config looked up in ``COLLATE_FUNCTIONS`` (its other keys bound), None as None."""
    if spec is None or callable(spec):
        function: Callable[..., Any] | None = spec
        return function
    if isinstance(spec, Mapping) and "type" in spec:
        try:
            target = COLLATE_FUNCTIONS.get(spec["type"]) if isinstance(spec["type"], str) \
                else spec["type"]
        except ConfigError as exc:
            raise ConfigError(f"{where}.collate_fn: {exc}") from None
        if not callable(target):
            raise ConfigError(f"{where}.collate_fn.type must name a function, got "
                              f"{spec['type']!r}")
        kwargs = {k: v for k, v in spec.items() if k != "type"}
        return functools.partial(target, **kwargs) if kwargs else target
    raise ConfigError(f"{where}.collate_fn must be a function or a config such as "
                      f"{{'type': 'pseudo_collate'}} (registered: "
                      f"{', '.join(COLLATE_FUNCTIONS.names())}), got {spec!r}")
