"""``OptimWrapperDict``: several optimizers (a GAN's generator and discriminator), by name.

The model updates them itself in ``train_step(data, optim_wrapper)``:
``optim_wrapper["generator"].update_params(g_loss)``.

Example::

    >>> import torch
    >>> from hookline.engine.optim_wrapper import OptimWrapper
    >>> from hookline.engine.optim_wrapper_dict import OptimWrapperDict
    >>> g, d = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    >>> wrappers = OptimWrapperDict(generator=OptimWrapper(torch.optim.SGD(g.parameters(), lr=0.1)),
    ...                             discriminator=OptimWrapper(torch.optim.SGD(d.parameters(), lr=0.2)))
    >>> wrappers.get_lr()
    {'generator.lr': [0.1], 'discriminator.lr': [0.2]}

As in MMEngine, each wrapper counts its own accumulation groups from its own
:meth:`~OptimWrapper.update_params` calls: the dict's ``initialize_count_status``
(which the train loop calls) leaves them alone, so a wrapper updated twice per
iteration (a critic loop) still steps every ``accumulative_counts`` updates with
the loss divided by that, and a run's last, unfinished group does not step. A
model that wants a span calls ``optim_wrapper[name].initialize_count_status(...)``
itself (mmagic's generator loop). Differences from MMEngine's class: it is not an
:class:`OptimWrapper` subclass (``isinstance(d, OptimWrapper)`` is False), an
unknown name is a ``KeyError`` naming the known ones, and ``get_lr()`` has no
``base_lr`` entries (see docs/optim_and_checkpoints.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import ItemsView, Iterator, KeysView, ValuesView
from typing import Any

import torch

from hookline.core import ConfigError

from .optim_wrapper import OptimWrapper
from .registries import OPTIM_WRAPPERS


@OPTIM_WRAPPERS.register()
class OptimWrapperDict:
    """Named :class:`OptimWrapper` s; learning rates, momenta and state are reported per name.

    ``update_params``, ``backward``, ``step`` and ``optim_context`` are not
    defined on the dict: which optimizer a loss updates is the model's decision,
    made in its ``train_step``. ``zero_grad()`` zeroes every wrapper's gradients.
    """

    def __init__(self, **optim_wrappers: OptimWrapper) -> None:
        for name, wrapper in optim_wrappers.items():
            if not isinstance(wrapper, OptimWrapper):
                raise ConfigError(f"OptimWrapperDict[{name!r}] must be an OptimWrapper, got "
                                  f"{wrapper!r}")
        self.optim_wrappers = dict(optim_wrappers)

    # -- mapping ----------------------------------------------------------------------------
    def __getitem__(self, name: str) -> OptimWrapper:
        try:
            return self.optim_wrappers[name]
        except KeyError:
            raise KeyError(f"no optimizer wrapper {name!r} in this OptimWrapperDict; its names: "
                           f"{', '.join(map(repr, self.optim_wrappers)) or 'none'}") from None

    def __contains__(self, name: object) -> bool:
        return name in self.optim_wrappers

    def __iter__(self) -> Iterator[str]:
        return iter(self.optim_wrappers)

    def __len__(self) -> int:
        return len(self.optim_wrappers)

    def keys(self) -> KeysView[str]:
        return self.optim_wrappers.keys()

    def values(self) -> ValuesView[OptimWrapper]:
        return self.optim_wrappers.values()

    def items(self) -> ItemsView[str, OptimWrapper]:
        return self.optim_wrappers.items()

    # -- what the Runner and hooks ask of any wrapper -------------------------------------------
    @property
    def message_hub(self) -> Any:
        return next(iter(self.values())).message_hub if self.optim_wrappers else None

    @message_hub.setter
    def message_hub(self, hub: Any) -> None:
        for wrapper in self.values():
            wrapper.message_hub = hub

    @property
    def param_groups(self) -> dict[str, list[dict[str, Any]]]:
        """``{name: that wrapper's param groups}`` (MMEngine's shape)."""
        return {name: wrapper.param_groups for name, wrapper in self.items()}

    def get_lr(self) -> dict[str, list[float]]:
        return {f"{name}.lr": wrapper.get_lr()["lr"] for name, wrapper in self.items()}

    def get_momentum(self) -> dict[str, list[float]]:
        return {f"{name}.momentum": wrapper.get_momentum()["momentum"]
                for name, wrapper in self.items()}

    def initialize_count_status(self, model: torch.nn.Module | None, init_counts: int,
                                max_counts: int) -> None:
        """Nothing, as in MMEngine: the dict does not know how often the model updates each
        wrapper per iteration, so each counts its own updates (see the module docstring)."""

    def should_step_schedulers(self) -> bool:
        return any(wrapper.should_update() for wrapper in self.values())

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def _not_here(self, what: str) -> str:
        return (f"OptimWrapperDict.{what}: call it on one optimizer, e.g. "
                f"optim_wrapper[{next(iter(self.optim_wrappers), 'name')!r}].{what}(...) "
                "in the model's train_step(data, optim_wrapper)")

    def update_params(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(self._not_here("update_params"))

    def backward(self, loss: torch.Tensor, **kwargs: Any) -> None:
        raise NotImplementedError(self._not_here("backward"))

    def step(self, **kwargs: Any) -> None:
        raise NotImplementedError(self._not_here("step"))

    def zero_grad(self, **kwargs: Any) -> None:
        """``zero_grad(**kwargs)`` of every wrapper (MMEngine's)."""
        for wrapper in self.values():
            wrapper.zero_grad(**kwargs)

    def optim_context(self, model: torch.nn.Module) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError(self._not_here("optim_context"))

    # -- state ---------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {name: wrapper.state_dict() for name, wrapper in self.items()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for name, state in state_dict.items():
            if name not in self.optim_wrappers:
                raise ConfigError(f"the checkpoint has optimizer state for {name!r}; this run's "
                                  f"optimizers are {sorted(self.optim_wrappers)}")
            self.optim_wrappers[name].load_state_dict(state)

    def pending_grads(self) -> dict[str, Any] | None:
        """``{name: {"grads": ..., "inner_count": n}}`` for each wrapper inside an
        accumulation group (its counter too: nothing re-counts it on resume), else None."""
        pending = {}
        for name, wrapper in self.items():
            grads = wrapper.pending_grads()
            counts = wrapper.accumulative_counts
            if grads is not None or (counts > 1 and wrapper.inner_count % counts):
                pending[name] = {"grads": grads, "inner_count": wrapper.inner_count}
        return pending or None

    def restore_grads(self, grads: Any) -> bool:
        """Put back what :meth:`pending_grads` returned (or, from older checkpoints,
        ``{name: grads}``); False when a wrapper's parameters differ."""
        if not isinstance(grads, dict):
            return False
        restored = True
        for name, entry in grads.items():
            wrapper = self.optim_wrappers.get(name)
            if wrapper is None:
                continue
            if isinstance(entry, dict):
                # the counter nothing else restores (the dict is not re-counted on resume)
                wrapper._inner_count = int(  # noqa: SLF001
                    entry.get("inner_count", wrapper.inner_count))
                entry = entry.get("grads")
            if entry is not None:
                restored = wrapper.restore_grads(entry) and restored
        return restored

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={wrapper!r}" for name, wrapper in self.items())
        return f"OptimWrapperDict({inner})"
