"""``param_scheduler`` for several optimizers (an ``OptimWrapperDict``), as MMEngine reads it.

With one optimizer wrapper per submodule (a GAN's ``generator`` and
``discriminator``), MMEngine takes ``param_scheduler`` either as a dict of
scheduler configs by optimizer name, or as one list of configs built for
every optimizer. :func:`per_optimizer` splits it that way, once for the
Runner's argument check and once for the build.

Example::

    >>> per_optimizer({"generator": {"type": "StepLR", "step_size": 2}}, ["generator", "critic"])
    [('generator', {'type': 'StepLR', 'step_size': 2})]
    >>> [name for name, _ in per_optimizer([{"type": "StepLR", "step_size": 2}], ["g", "d"])]
    ['g', 'd']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hookline.core import ConfigError

__all__ = ["per_optimizer", "wrapper_names"]


def wrapper_names(optim_wrapper: Any) -> list[str] | None:
    """The optimizer names of an ``OptimWrapperDict`` (object or config), None for a single
    wrapper (or none)."""
    if isinstance(optim_wrapper, Mapping):
        children = {k: v for k, v in optim_wrapper.items() if k != "type"}
        several = optim_wrapper.get("type") == "OptimWrapperDict" or (
            "type" not in optim_wrapper and "optimizer" not in optim_wrapper and children
            and all(isinstance(v, Mapping) for v in children.values()))
        return list(children) if several else None
    if optim_wrapper is not None and not hasattr(optim_wrapper, "optimizer") \
            and callable(getattr(optim_wrapper, "keys", None)):
        return list(optim_wrapper.keys())
    return None


def per_optimizer(spec: Any, names: Sequence[str]) -> list[tuple[str, Any]]:
    """``[(optimizer name, scheduler spec), ...]``: a dict by optimizer name is split (an
    unknown name is a :class:`ConfigError`), anything else goes to every optimizer."""
    if spec is None:
        return []
    if isinstance(spec, Mapping) and "type" not in spec:
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ConfigError(f"param_scheduler names optimizer(s) {unknown} this run does not "
                              f"have; its optimizers: {', '.join(names)} (or give one list of "
                              "schedulers, built for each of them)")
        return [(name, spec[name]) for name in names if name in spec]
    return [(name, spec) for name in names]
