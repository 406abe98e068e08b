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

    ``update_params``, ``backward``, ``step`` and ``zero_grad`` are not defined
    on the dict: which optimizer a loss updates is the model's decision, made
    in its ``train_step``.
    """

    def __init__(self, **optim_wrappers: OptimWrapper) -> None:
        for name, wrapper in optim_wrappers.items():
            if not isinstance(wrapper, OptimWrapper):
                raise ConfigError(f"OptimWrapperDict[{name!r}] must be an OptimWrapper, got "
                                  f"{wrapper!r}")
        self.optim_wrappers = dict(optim_wrappers)

    # -- mapping ----------------------------------------------------------------------------
    def __getitem__(self, name: str) -> OptimWrapper:
        return self.optim_wrappers[name]

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
    def param_groups(self) -> list[dict[str, Any]]:
        """Every wrapper's param groups, in name order."""
        return [group for wrapper in self.values() for group in wrapper.param_groups]

    def get_lr(self) -> dict[str, list[float]]:
        return {f"{name}.lr": wrapper.get_lr()["lr"] for name, wrapper in self.items()}

    def get_momentum(self) -> dict[str, list[float]]:
        return {f"{name}.momentum": wrapper.get_momentum()["momentum"]
                for name, wrapper in self.items()}

    def initialize_count_status(self, model: torch.nn.Module | None, init_counts: int,
                                max_counts: int) -> None:
        for wrapper in self.values():
            wrapper.initialize_count_status(model, init_counts, max_counts)

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
        raise NotImplementedError(self._not_here("zero_grad"))

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
        pending = {name: wrapper.pending_grads() for name, wrapper in self.items()}
        pending = {name: grads for name, grads in pending.items() if grads is not None}
        return pending or None

    def restore_grads(self, grads: Any) -> bool:
        if not isinstance(grads, dict):
            return False
        return all(self.optim_wrappers[name].restore_grads(g) for name, g in grads.items()
                   if name in self.optim_wrappers)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={wrapper!r}" for name, wrapper in self.items())
        return f"OptimWrapperDict({inner})"
