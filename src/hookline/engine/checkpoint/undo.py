"""Undo for applying a checkpoint: what it changes, taken before, put back if it fails.

Applying a checkpoint to a run changes the optimizer (and its AMP scaler),
the gradients of an unfinished accumulation group, the schedulers, the hooks'
states and the global RNGs, then the model's weights and the run's position.
:class:`Undo` records the first group
(the optimizer by reference: loading a state dict replaces its tensors rather
than writing into them; hook states as CPU copies) so that a checkpoint that
turns out not to fit halfway through leaves the run exactly as it was, and the
next candidate (``resume="auto"``) starts from a clean run. The model's
weights and the position are not recorded: they are set last, once everything
else went in, and only after :func:`~hookline.engine.checkpoint.fit.check_fits`
found the weights' keys and shapes and the position's counts right.

Example::

    >>> import torch
    >>> from types import SimpleNamespace
    >>> model = torch.nn.Linear(2, 1)
    >>> optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> runner = SimpleNamespace(optim_wrapper=SimpleNamespace(
    ...     state_dict=optimizer.state_dict, load_state_dict=optimizer.load_state_dict),
    ...     param_schedulers=[], model=model)
    >>> undo = Undo(runner, hooks={})
    >>> optimizer.param_groups[0]["lr"] = 5.0
    >>> undo.restore(); optimizer.param_groups[0]["lr"]
    0.1
"""

from __future__ import annotations

import collections
import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from ..rng import get_rng_state, set_rng_state
from ..schedulers_per_optimizer import load_scheduler_state, scheduler_pairs

if TYPE_CHECKING:  # pragma: no cover
    from ..hook import Hook
    from ..runner import Runner


def cpu_copy(obj: Any) -> Any:
    """A copy of a state dict: tensors copied to the CPU, containers rebuilt, the rest deep-copied.

    Example::

        >>> state = {"w": torch.ones(2), "n": [1, {"k": "v"}]}
        >>> copied = cpu_copy(state); copied["w"] += 1; copied["n"][1]["k"] = "changed"
        >>> state["w"].tolist(), state["n"]
        ([1.0, 1.0], [1, {'k': 'v'}])
    """
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, collections.OrderedDict):
        return collections.OrderedDict((k, cpu_copy(v)) for k, v in obj.items())
    if isinstance(obj, Mapping):
        return {k: cpu_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [cpu_copy(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(cpu_copy(v) for v in obj)
    return copy.deepcopy(obj)


def _hook_state(hook: Hook) -> Any:
    """A CPU copy of ``hook.state_dict()``; None where the hook cannot give its state yet (a
    Lightning callback whose ``state_dict()`` reads what its ``setup()`` creates): the state
    the checkpoint brings replaces nothing then, so there is nothing to put back."""
    try:
        state = hook.state_dict()
    except Exception:  # the hook's own code: its load_state_dict decides
        return None
    return cpu_copy(state)


class Undo:
    """Records what applying a checkpoint to ``runner`` may change; :meth:`restore` puts it back.

    Args:
        runner: the run (its optimizer wrapper, schedulers and model's gradients).
        hooks: the hooks whose state the checkpoint is about to load, by state key.
    """

    def __init__(self, runner: Runner, hooks: Mapping[str, Hook]) -> None:
        self._runner = runner
        wrapper = runner.optim_wrapper
        self._optimizer = wrapper.state_dict() if wrapper is not None else None
        scaler = getattr(runner, "grad_scaler", None)
        self._scaler = scaler.state_dict() if scaler is not None else None
        self._schedulers = [copy.deepcopy(s.state_dict())
                            for s, _ in scheduler_pairs(runner.param_schedulers)]
        self._grads = [(p, p.grad) for p in runner.model.parameters()]
        self._hooks = {key: (hook, _hook_state(hook)) for key, hook in hooks.items()}
        self._rng = get_rng_state()

    def restore(self) -> None:
        """Put back everything recorded."""
        runner = self._runner
        wrapper, scaler = runner.optim_wrapper, getattr(runner, "grad_scaler", None)
        if wrapper is not None and self._optimizer is not None:
            wrapper.load_state_dict(self._optimizer)
        if scaler is not None and self._scaler is not None:
            scaler.load_state_dict(self._scaler)
        for (scheduler, by_epoch), state in zip(scheduler_pairs(runner.param_schedulers),
                                                self._schedulers):
            load_scheduler_state(scheduler, by_epoch, state)
        for param, grad in self._grads:
            param.grad = grad
        for hook, state in self._hooks.values():
            if state:
                hook.load_state_dict(state)
        set_rng_state(self._rng)
