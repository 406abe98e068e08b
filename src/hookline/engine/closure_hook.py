"""ClosureHook: any plain function as a Runner hook on one stage (``runner.on`` builds one).

Example::

    >>> from hookline.engine.closure_hook import ClosureHook
    >>> seen = []
    >>> hook = ClosureHook("after_train_epoch", lambda runner: seen.append(runner.epoch), every=2)
    >>> hook.triggered_stages()
    ['after_train_epoch']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hookline.core import ConfigError, HookError, HookHandle, Priority
from hookline.core.event import check_options, filtered
from hookline.core.priority import PriorityLike

from .hook import STAGES, Hook
from .registries import HOOKS

if TYPE_CHECKING:  # pragma: no cover
    from .runner import Runner


def _fn_name(fn: Callable[..., Any]) -> str:
    target = getattr(fn, "__func__", fn)
    return getattr(target, "__qualname__", None) or type(target).__qualname__


@HOOKS.register()
class ClosureHook(Hook):
    """Calls ``fn`` at one ``stage`` with the stage's arguments: ``runner`` first,
    then the stage's keyword arguments (e.g. ``batch_idx``, ``data_batch``,
    ``outputs`` for ``after_train_iter``; ``metrics`` for ``after_val_epoch``).

    Args:
        stage: one of the Runner's stages (:data:`hookline.engine.hook.STAGES`).
        fn: the function; its return value is ignored.
        priority: a :class:`hookline.core.Priority` name or an int 0..100
            (default NORMAL).
        every: call ``fn`` on every ``every``-th call of the stage (counted
            over the whole run, and kept across resume).
        once: call ``fn`` once, then stop (kept across resume).
        when: ``when(runner, **stage_kwargs) -> bool``; ``fn`` runs only when
            true (checked on the calls ``every`` lets through).

    An exception in ``fn`` (or ``when``) becomes a :class:`hookline.core.HookError`
    naming ``fn`` and the stage. :meth:`hookline.Runner.on` is the shortcut.

    Example::

        def log_lr(runner, batch_idx, data_batch=None, outputs=None):
            runner.logger.info("lr %.4g", runner.optimizer.param_groups[0]["lr"])
        runner.register_hook(ClosureHook("after_train_iter", log_lr, every=100))
    """

    priority: PriorityLike = "NORMAL"

    def __init__(self, stage: str, fn: Callable[..., Any], *, priority: Any = None,
                 every: int = 1, once: bool = False,
                 when: Callable[..., bool] | None = None) -> None:
        if stage not in STAGES:
            raise ConfigError.unknown("Runner stage", stage, STAGES)
        if not callable(fn):
            raise ConfigError(f"ClosureHook fn must be callable, got {fn!r} for stage {stage!r}")
        check_options(once, every, when)
        if priority is not None:
            self.priority = Priority.get(priority)
        self.stage = stage
        self.fn = fn
        self.every = every
        self.once = once
        self.when = when
        #: calls of the stage so far (what ``every`` counts)
        self.calls = 0
        #: True once a ``once=True`` hook has run
        self.done = False
        self.handle: HookHandle | None = None
        gate = (lambda *args, **kwargs: self.calls % every == 0) if every > 1 else None
        self._call = filtered(fn, once, 1, when, self._finish, gate)
        # The hook table reads the stage's method by name: this instance's attribute
        # shadows the base class's no-op for the one stage, and only for this hook.
        setattr(self, stage, self._dispatch)

    def triggered_stages(self) -> list[str]:
        """Just :attr:`stage`."""
        return [self.stage]

    def _dispatch(self, runner: Runner, **kwargs: Any) -> None:
        if self.done:
            return
        self.calls += 1
        try:
            self._call(runner, **kwargs)
        except HookError:
            raise
        except Exception as exc:
            raise HookError(self.fn, self.stage, exc) from exc

    def _finish(self) -> None:
        self.done = True
        if self.handle is not None:
            self.handle.remove()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call ``fn`` directly (so a function decorated with ``runner.on`` stays callable)."""
        return self.fn(*args, **kwargs)

    # -- state --------------------------------------------------------------------------
    @property
    def state_key(self) -> str:
        return f"ClosureHook[{self.stage}:{_fn_name(self.fn)}]"

    def state_dict(self) -> dict[str, Any]:
        if self.every == 1 and not self.once:
            return {}
        return {"calls": self.calls, "done": self.done}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls = int(state.get("calls", 0))
        self.done = bool(state.get("done", False))

    def __repr__(self) -> str:
        return f"ClosureHook({self.stage!r}, {_fn_name(self.fn)})"
